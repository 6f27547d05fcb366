package directline

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// Upload limits besides Options.MaxUploadBytes (per file).
const (
	// maxUploadFiles is the most files one upload may carry.
	maxUploadFiles = 10
	// maxFileNameBytes bounds a stored file name (most file systems allow 255 bytes).
	maxFileNameBytes = 255
	// multipartOverhead allows for part headers and boundaries on top of the parts' contents.
	multipartOverhead = 1 << 20
)

// activityContentType is the media type DirectLineJS gives the activity part of an upload.
const activityContentType = "application/vnd.microsoft.activity"

// uploadedFile is one file of an upload, before it is stored.
type uploadedFile struct {
	name        string
	contentType string
	data        []byte
}

// upload is POST /conversations/{id}/upload?userId=U (Direct Line 3.0 send-activity "upload and
// send files"): either multipart/form-data with an optional activity part (media type
// application/vnd.microsoft.activity, or application/json named "activity") and file parts, or one
// file as the raw body (Content-Type, and Content-Disposition for the name). Each file is stored
// with the conversation; the activity (an empty message from U when there is no activity part)
// gets one attachment per file with contentUrl set to a signed download link. Attachments in the
// activity part without a contentUrl (DirectLineJS strips them) are matched to the files in order.
//
// Errors: ErrMessageSizeTooBig for a file over MaxUploadBytes or an activity part over
// MaxActivityBytes; ErrBadArgument for a malformed body, too many files or no file at all;
// the errors of POST activities otherwise.
func (s *Server) upload(c echo.Context) error {
	cred, id, err := s.conversationRequest(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	conv, err := s.store.Conversation(ctx, id)
	if err != nil {
		return err
	}
	userID := c.QueryParam("userId")
	if len(userID) > maxIDLength {
		return ErrBadArgument.Msg("userId is longer than %d characters", maxIDLength)
	}
	// As in a JSON body (checkUTF8): distinct ids that are not UTF-8 would read alike.
	if !utf8.ValidString(userID) {
		return ErrBadArgument.Msg("userId is not valid UTF-8")
	}
	r := c.Request()
	mt, params, mtErr := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	multipart := mtErr == nil && mt == "multipart/form-data"
	whole := maxUploadFiles*s.maxUpload + s.maxAct + multipartOverhead
	// A raw body is one file, so its Content-Length alone can exceed what it may be.
	declared := s.maxUpload
	if multipart {
		declared = whole
	}
	if err := declaredTooLarge(r, declared); err != nil {
		return err
	}
	body := http.MaxBytesReader(nil, r.Body, whole)
	var (
		a     *activity.Activity
		files []uploadedFile
	)
	if multipart {
		a, files, err = s.readMultipart(body, params["boundary"])
		if err != nil {
			return err
		}
	} else {
		f, err := s.readRawFile(r, body)
		if err != nil {
			return err
		}
		files = []uploadedFile{f}
	}
	if a == nil {
		if len(files) == 0 {
			return ErrBadArgument.Msg("the upload carries neither an activity nor a file")
		}
		a = &activity.Activity{Type: activity.TypeMessage}
	}
	stored := make([]*activity.Attachment, len(files))
	for i, f := range files {
		attID := uuid.NewString()
		err := s.store.PutAttachment(ctx, id, store.Attachment{ID: attID, ContentType: f.contentType, Name: f.name, Data: f.data, Created: s.tokens.now().UTC()})
		if err != nil {
			return err
		}
		link, err := s.downloadURL(id, attID)
		if err != nil {
			return err
		}
		stored[i] = &activity.Attachment{ContentType: f.contentType, ContentURL: link, Name: f.name}
	}
	attachFiles(a, stored)
	activityID, err := s.post(ctx, cred, conv, a, userID, s.uploadAck)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resourceResponse{ID: activityID})
}

// readMultipart reads the parts of a multipart upload.
func (s *Server) readMultipart(body io.Reader, boundary string) (*activity.Activity, []uploadedFile, error) {
	if boundary == "" {
		return nil, nil, ErrBadArgument.Msg("multipart body without boundary")
	}
	mr := multipart.NewReader(body, boundary)
	var (
		a     *activity.Activity
		files []uploadedFile
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return a, files, nil
		}
		if err != nil {
			return nil, nil, malformed(err)
		}
		mt, _, mtErr := mime.ParseMediaType(part.Header.Get(echo.HeaderContentType))
		isActivity := mt == activityContentType ||
			(part.FormName() == "activity" && (mt == echo.MIMEApplicationJSON || part.Header.Get(echo.HeaderContentType) == ""))
		if isActivity {
			if a != nil {
				return nil, nil, ErrBadArgument.Msg("the upload has more than one activity part")
			}
			data, err := readLimited(part, s.maxAct)
			if err != nil {
				return nil, nil, err
			}
			if err := checkUTF8(data); err != nil {
				return nil, nil, err
			}
			if a, err = activity.Decode(data); err != nil {
				return nil, nil, err
			}
			continue
		}
		if len(files) == maxUploadFiles {
			return nil, nil, ErrBadArgument.Msg("an upload carries at most %d files", maxUploadFiles)
		}
		data, err := readLimited(part, s.maxUpload)
		if err != nil {
			return nil, nil, err
		}
		ct := part.Header.Get(echo.HeaderContentType)
		if mtErr != nil || ct == "" {
			ct = echo.MIMEOctetStream
		}
		files = append(files, uploadedFile{name: sanitizeFileName(part.FileName()), contentType: ct, data: data})
	}
}

// readRawFile reads a single-file upload: the body is the file.
func (s *Server) readRawFile(r *http.Request, body io.Reader) (uploadedFile, error) {
	data, err := readLimited(body, s.maxUpload)
	if err != nil {
		return uploadedFile{}, err
	}
	if len(data) == 0 {
		return uploadedFile{}, ErrBadArgument.Msg("empty upload")
	}
	ct := r.Header.Get(echo.HeaderContentType)
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		ct = echo.MIMEOctetStream
	}
	var name string
	if _, params, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentDisposition)); err == nil {
		name = params["filename"]
	}
	return uploadedFile{name: sanitizeFileName(name), contentType: ct, data: data}, nil
}

// readLimited reads r to the end; more than limit bytes is ErrMessageSizeTooBig.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, malformed(err)
	}
	if n > limit {
		return nil, ErrMessageSizeTooBig.Msg("a part of the upload is larger than %d bytes", limit)
	}
	return buf.Bytes(), nil
}

// malformed maps a read error of a request body: over the request limit stays a size error,
// anything else is a malformed body.
func malformed(err error) error {
	var sizeErr *http.MaxBytesError
	if errors.As(err, &sizeErr) {
		return err
	}
	return ErrBadArgument.Msg("malformed upload body")
}

// attachFiles puts the stored files into a's attachments: first into the attachments that have
// no content and no usable contentUrl (empty or a browser blob: URL), in order, taking the file's
// name, contentType and contentUrl; the remaining files are appended.
func attachFiles(a *activity.Activity, files []*activity.Attachment) {
	next := 0
	for _, att := range a.Attachments {
		if next == len(files) {
			return
		}
		if att == nil || att.Content != nil || (att.ContentURL != "" && !strings.HasPrefix(att.ContentURL, "blob:")) {
			continue
		}
		f := files[next]
		att.ContentURL, att.Name, att.ContentType = f.ContentURL, f.Name, f.ContentType
		next++
	}
	a.Attachments = append(a.Attachments, files[next:]...)
}

// sanitizeFileName makes an uploaded file name safe to store, show and put in a header: the last
// path element only (both / and \), valid UTF-8 without control characters, at most 255 bytes,
// never "", "." or "..". The name is never used as a file system path.
func sanitizeFileName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	for len(name) > maxFileNameBytes {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}

// downloadURL is the signed link to one stored attachment.
func (s *Server) downloadURL(conv, attachmentID string) (string, error) {
	t, err := s.tokens.attachmentToken(conv, attachmentID, s.attLife)
	if err != nil {
		return "", err
	}
	u := s.apiURL("conversations", conv, "attachments", attachmentID)
	u.RawQuery = "t=" + url.QueryEscape(t)
	return u.String(), nil
}

// download is GET /conversations/{id}/attachments/{att}?t=T: the uploaded bytes with their content
// type. The link itself is the credential (bots fetch contentUrl without Direct Line auth); an
// unknown file or an invalid or expired link is 404 BadArgument "File not found", like the hosted
// service. Files are served as attachments with a sandboxing CSP so uploaded HTML never runs on
// the service's origin.
func (s *Server) download(c echo.Context) error {
	id, err := conversationParam(c)
	if err != nil {
		return ErrFileNotFound
	}
	attID := c.Param("att")
	cl, err := s.tokens.verify(c.QueryParam("t"), useAttachment)
	if err != nil || cl.Conv != id || cl.Att != attID {
		return ErrFileNotFound
	}
	att, err := s.store.Attachment(c.Request().Context(), id, attID)
	if errors.Is(err, store.ErrConversationNotFound) {
		return ErrFileNotFound
	}
	if err != nil {
		return err
	}
	return serveFile(c, att)
}

// serveFile answers with a stored file's bytes and content type, as an attachment, unsniffed and
// under a sandboxing CSP, so an uploaded HTML file never runs on the service's origin.
func serveFile(c echo.Context, att store.Attachment) error {
	h := c.Response().Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": att.Name}))
	return c.Blob(http.StatusOK, att.ContentType, att.Data)
}
