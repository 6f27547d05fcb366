package bolt

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/store"
)

// maxAttachmentSize is bbolt's value limit less room for the metadata; callers enforce their own,
// much smaller upload limits.
const maxAttachmentSize = bolt.MaxValueSize - 1<<16

// PutAttachment stores att (Created defaults to the clock) under att.ID in the conversation,
// replacing an attachment with the same id, durably. Errors: store.ErrConversationNotFound,
// store.ErrClosed, an empty or too long ID (over 32 KiB) or data over bbolt's value limit.
func (s *Store) PutAttachment(ctx context.Context, conversationID string, att store.Attachment) error {
	if att.ID == "" || len(att.ID) > bolt.MaxKeySize {
		return fmt.Errorf("store/bolt: attachment id must be 1 to %d bytes", bolt.MaxKeySize)
	}
	if len(att.Data) > maxAttachmentSize {
		return errors.New("store/bolt: attachment too large")
	}
	if att.Created.IsZero() {
		att.Created = s.now()
	}
	v, err := encodeAttachment(att)
	if err != nil {
		return err
	}
	return s.submit(ctx, func(b *batch) error {
		c, err := b.conv(conversationID)
		if err != nil {
			return err
		}
		cb, err := c.ownBucket()
		if err != nil {
			return err
		}
		atts := cb.Bucket(bucketAttachments)
		if atts == nil {
			return errors.New("store/bolt: conversation " + conversationID + " is missing its attachments bucket")
		}
		return fatal(atts.Put([]byte(att.ID), v))
	})
}

// Attachment returns a stored attachment (Created in UTC). Errors: store.ErrConversationNotFound,
// store.ErrAttachmentNotFound, store.ErrClosed.
func (s *Store) Attachment(ctx context.Context, conversationID, attachmentID string) (store.Attachment, error) {
	var att store.Attachment
	err := s.view(ctx, func(tx *bolt.Tx) error {
		cb, err := conversationBucket(tx, conversationID)
		if err != nil {
			return err
		}
		if attachmentID == "" || len(attachmentID) > bolt.MaxKeySize {
			return store.ErrAttachmentNotFound
		}
		v := cb.Bucket(bucketAttachments).Get([]byte(attachmentID))
		if v == nil {
			return store.ErrAttachmentNotFound
		}
		att, err = decodeAttachment(attachmentID, v)
		return err
	})
	return att, err
}
