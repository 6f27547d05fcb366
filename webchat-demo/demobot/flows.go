package demobot

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/directline-go/directline/activity"
)

const streamText = "Livestreaming sends one answer as a series of typing activities: each revision " +
	"carries the whole text so far, names the first revision's id as its streamId and counts up " +
	"streamSequence, and a final message with streamType final closes the stream so Web Chat " +
	"replaces the growing text with the finished answer in the same place."

// livestream sends streamRevisions typing revisions and a final message (WEBCHAT-ORDERING §8,
// field case R15): the first revision has no streamId and streamSequence 1; the id the service
// returns for it is the streamId of every later revision and of the final message.
func (t *turn) livestream(ctx context.Context) error {
	words := strings.Fields(streamText)
	var streamID string
	for seq := 1; seq <= streamRevisions; seq++ {
		if seq > 1 {
			if err := sleep(ctx, t.streamDelay); err != nil {
				return err
			}
		}
		// Revision seq shows a strictly longer prefix than revision seq-1.
		n := seq * len(words) / (streamRevisions + 1)
		rev := t.newActivity(activity.TypeTyping)
		rev.Text = strings.Join(words[:max(n, 1)], " ")
		rev.SetChannelData("streamType", rawJSON(activity.StreamTypeStreaming))
		rev.SetChannelData("streamSequence", rawJSON(seq))
		if seq > 1 {
			rev.SetChannelData("streamId", rawJSON(streamID))
		}
		id, err := t.send(ctx, rev)
		if err != nil {
			return err
		}
		if seq == 1 {
			if id == "" {
				return errors.New("livestream: the connector returned no id for the first revision")
			}
			streamID = id
		}
	}
	if err := sleep(ctx, t.streamDelay); err != nil {
		return err
	}
	final := t.newActivity(activity.TypeMessage)
	final.Text = streamText
	final.SetChannelData("streamId", rawJSON(streamID))
	final.SetChannelData("streamType", rawJSON(activity.StreamTypeFinal))
	_, err := t.send(ctx, final)
	return err
}

// stepTexts are the parts of the how-to, by position.
var stepTexts = [...]string{
	"Step 1: start a conversation with POST /v3/directline/conversations.",
	"Step 2: open the streamUrl WebSocket to receive activities.",
	"Step 3: post activities; each comes back on the stream with its id.",
	"Step 4: after a disconnect, reconnect with the last watermark to miss nothing.",
}

// stepOrder is the order the steps are sent in: out of position order, so that the client has to
// place them by position (WEBCHAT-ORDERING §8, field case R16).
var stepOrder = [...]int{3, 1, 4, 2}

// partEntity is the schema.org Message entity that makes an activity part of a HowTo grouping.
type partEntity struct {
	Type     string `json:"type"`
	Context  string `json:"@context"`
	ID       string `json:"@id"`
	AtType   string `json:"@type"`
	IsPartOf struct {
		ID   string `json:"@id"`
		Type string `json:"@type"`
	} `json:"isPartOf"`
	Position int `json:"position"`
}

// steps sends the four parts of one HowTo grouping, each with the same isPartOf blank-node id,
// fresh per request.
func (t *turn) steps(ctx context.Context) error {
	group := "_:howto-" + rand.Text()
	for _, pos := range stepOrder {
		e := partEntity{Type: "https://schema.org/Message", Context: "https://schema.org", AtType: "Message", Position: pos}
		e.IsPartOf.ID, e.IsPartOf.Type = group, "HowTo"
		a := t.newActivity(activity.TypeMessage)
		a.Text = stepTexts[pos-1]
		a.Entities = []json.RawMessage{rawJSON(e)}
		if _, err := t.send(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// AdaptiveCardContentType is the attachment content type of an Adaptive Card.
const AdaptiveCardContentType = "application/vnd.microsoft.card.adaptive"

func (t *turn) card(ctx context.Context) error {
	card := map[string]any{
		"type":    "AdaptiveCard",
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"version": "1.4",
		"body": []any{
			map[string]any{"type": "TextBlock", "text": "Direct Line demo card", "weight": "Bolder", "size": "Medium", "wrap": true},
			map[string]any{"type": "TextBlock", "text": "This card came from the demo bot through the Bot Connector API.", "wrap": true},
			map[string]any{"type": "FactSet", "facts": []any{
				map[string]any{"title": "Conversation", "value": conversationID(t.in)},
				map[string]any{"title": "Channel", "value": t.in.ChannelID},
			}},
			map[string]any{"type": "Input.Text", "id": "comment", "placeholder": "Write something and press Send"},
		},
		"actions": []any{
			map[string]any{"type": "Action.Submit", "title": "Send", "data": map[string]any{"action": "cardSubmit"}},
		},
	}
	a := t.newActivity(activity.TypeMessage)
	a.Attachments = []*activity.Attachment{{ContentType: AdaptiveCardContentType, Content: rawJSON(card)}}
	_, err := t.send(ctx, a)
	return err
}

// describeAttachments answers with the name, content type and size of every attachment. The size
// is measured by downloading contentUrl with a plain GET (Direct Line attachment URLs need no
// bot credentials, DIRECTLINE.md §1.9), else taken from channelData.attachmentSizes, which Web
// Chat fills when it sends files.
func (t *turn) describeAttachments(ctx context.Context) error {
	if len(t.in.Attachments) == 0 {
		return t.say(ctx, "Attach a file (the paperclip button) and I will tell you its name, type and size.")
	}
	var sizes []json.Number
	if raw, ok := t.in.ChannelData["attachmentSizes"]; ok {
		_ = json.Unmarshal(raw, &sizes) // a malformed list only loses the fallback
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You sent %d attachment%s:\n", len(t.in.Attachments), plural(len(t.in.Attachments)))
	for i, att := range t.in.Attachments {
		name := att.Name
		if name == "" {
			name = "(no name)"
		}
		ctype := att.ContentType
		if ctype == "" {
			ctype = "no content type"
		}
		size := "size unknown"
		if n, ok := t.download(ctx, att.ContentURL); ok {
			size = strconv.FormatInt(n, 10) + " bytes"
		} else if i < len(sizes) {
			size = sizes[i].String() + " bytes"
		} else if att.ContentURL == "" && len(att.Content) > 0 {
			size = strconv.Itoa(len(att.Content)) + " bytes of inline content"
		}
		fmt.Fprintf(&b, "\n- %s, %s, %s", name, ctype, size)
	}
	return t.say(ctx, b.String())
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// download GETs an http(s) contentUrl and counts its bytes. ok is false when the URL is not
// http(s), the GET fails or does not answer 200, or the file is longer than the download cap.
func (t *turn) download(ctx context.Context, contentURL string) (int64, bool) {
	if !strings.HasPrefix(contentURL, "http://") && !strings.HasPrefix(contentURL, "https://") {
		return 0, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, contentURL, nil)
	if err != nil {
		return 0, false
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, t.maxDownload+1))
	if err != nil || n > t.maxDownload {
		return 0, false
	}
	return n, true
}
