package client_test

import (
	"context"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/client"
	"github.com/directline-go/directline/directline/client/clienttest"
)

// TestReadmeInTests is the example of the README's section "In tests".
func TestReadmeInTests(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{Bot: true}) // answers "You said: <text>"
	c, err := client.New(client.Options{BaseURL: srv.URL, Secret: clienttest.Secret, UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conv, err := c.StartConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := conv.Subscribe(ctx, client.SubscribeOptions{}) // WebSocket; client.Polling polls
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := conv.Post(ctx, &activity.Activity{Type: "message", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hi", "You said: hi"} { // in sequence order
		if d, ok := <-sub.C; !ok || d.Activity.Text != want {
			t.Fatalf("want %q; the subscription ended (%v) or gave %+v", want, sub.Err(), d.Activity)
		}
	}
}
