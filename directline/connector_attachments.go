package directline

import (
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/directline-go/directline/store"
)

// Attachment views of the Bot Connector API.
const (
	viewOriginal  = "original"
	viewThumbnail = "thumbnail"
)

// attachmentData is the Bot Connector AttachmentData.
type attachmentData struct {
	Type            string `json:"type"`
	Name            string `json:"name"`
	OriginalBase64  []byte `json:"originalBase64"`
	ThumbnailBase64 []byte `json:"thumbnailBase64"`
}

// attachmentInfo is the Bot Connector AttachmentInfo.
type attachmentInfo struct {
	Name  string           `json:"name"`
	Type  string           `json:"type"`
	Views []attachmentView `json:"views"`
}

type attachmentView struct {
	ViewID string `json:"viewId"`
	Size   int    `json:"size"`
}

// connectorAttachmentID makes the id UploadAttachment returns: GET /v3/attachments/{id} has no
// conversation in its path, so the id carries it (base64url, then "." and the stored id).
func connectorAttachmentID(conv, stored string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(conv)) + "." + stored
}

// parseConnectorAttachmentID is the inverse of connectorAttachmentID; ErrFileNotFound when id is
// not one.
func parseConnectorAttachmentID(id string) (conv, stored string, err error) {
	enc, stored, ok := strings.Cut(id, ".")
	raw, derr := base64.RawURLEncoding.DecodeString(enc)
	if !ok || derr != nil || len(raw) == 0 || stored == "" {
		return "", "", ErrFileNotFound
	}
	return string(raw), stored, nil
}

// thumbnailID is the stored id of an attachment's thumbnail view.
func thumbnailID(stored string) string { return stored + "." + viewThumbnail }

// uploadAttachment is UploadAttachment: POST /v3/conversations/{id}/attachments with
// AttachmentData {type, name, originalBase64, thumbnailBase64} → 200 {id}. The file is kept with
// the conversation; the bot links to it as {serviceUrl}v3/attachments/{id}/views/original.
// Errors: ErrMissingProperty without type or originalBase64, ErrBadArgument for bad base64,
// ErrMessageSizeTooBig over MaxUploadBytes.
func (s *Server) uploadAttachment(c echo.Context) error {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return err
	}
	var d attachmentData
	// Base64 takes 4 bytes for 3, for the original and the thumbnail.
	if err := readJSON(c, 3*s.maxUpload+multipartOverhead, &d); err != nil {
		return err
	}
	if d.Type == "" || len(d.OriginalBase64) == 0 {
		return ErrMissingProperty.Msg("AttachmentData needs type and originalBase64")
	}
	if _, _, err := mime.ParseMediaType(d.Type); err != nil {
		return ErrBadArgument.Msg("type is not a media type")
	}
	if int64(len(d.OriginalBase64)) > s.maxUpload || int64(len(d.ThumbnailBase64)) > s.maxUpload {
		return ErrMessageSizeTooBig.Msg("an attachment is larger than %d bytes", s.maxUpload)
	}
	ctx := c.Request().Context()
	stored := uuid.NewString()
	name := sanitizeFileName(d.Name)
	now := s.tokens.now().UTC()
	if len(d.ThumbnailBase64) > 0 {
		thumb := store.Attachment{ID: thumbnailID(stored), ContentType: d.Type, Name: name, Data: d.ThumbnailBase64, Created: now}
		if err := s.store.PutAttachment(ctx, conv.ID, thumb); err != nil {
			return err
		}
	}
	att := store.Attachment{ID: stored, ContentType: d.Type, Name: name, Data: d.OriginalBase64, Created: now}
	if err := s.store.PutAttachment(ctx, conv.ID, att); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resourceResponse{ID: connectorAttachmentID(conv.ID, stored)})
}

// connectorAttachment loads the view of the attachment named by the :attachmentId parameter.
func (s *Server) connectorAttachment(c echo.Context, view string) (store.Attachment, error) {
	id, err := pathParam(c, "attachmentId")
	if err != nil {
		return store.Attachment{}, ErrFileNotFound
	}
	conv, stored, err := parseConnectorAttachmentID(id)
	if err != nil {
		return store.Attachment{}, err
	}
	if view == viewThumbnail {
		stored = thumbnailID(stored)
	}
	att, err := s.store.Attachment(c.Request().Context(), conv, stored)
	if errors.Is(err, store.ErrConversationNotFound) || errors.Is(err, store.ErrAttachmentNotFound) {
		return store.Attachment{}, ErrFileNotFound
	}
	return att, err
}

// getAttachmentInfo is GetAttachmentInfo: GET /v3/attachments/{id} → 200 {name, type,
// views:[{viewId, size}]}; ErrFileNotFound for an unknown id.
func (s *Server) getAttachmentInfo(c echo.Context) error {
	att, err := s.connectorAttachment(c, viewOriginal)
	if err != nil {
		return err
	}
	info := attachmentInfo{Name: att.Name, Type: att.ContentType, Views: []attachmentView{{ViewID: viewOriginal, Size: len(att.Data)}}}
	if thumb, err := s.connectorAttachment(c, viewThumbnail); err == nil {
		info.Views = append(info.Views, attachmentView{ViewID: viewThumbnail, Size: len(thumb.Data)})
	}
	return c.JSON(http.StatusOK, info)
}

// getAttachmentView is GetAttachment: GET /v3/attachments/{id}/views/{viewId} (original or
// thumbnail) → 200 with the bytes, served like client downloads (nosniff, sandboxed, as an
// attachment); ErrFileNotFound for an unknown id or view.
func (s *Server) getAttachmentView(c echo.Context) error {
	view := c.Param("viewId")
	if view != viewOriginal && view != viewThumbnail {
		return ErrFileNotFound
	}
	att, err := s.connectorAttachment(c, view)
	if err != nil {
		return err
	}
	return serveFile(c, att)
}
