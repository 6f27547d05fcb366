package client

import (
	"testing"
)

// echoFrame is a stream frame as this service sends a user's message back.
var echoFrame = []byte(`{"activities":[{"type":"message","id":"8f3c1a2b-5d6e-4f70-9a1b-2c3d4e5f6a7b|0000042","timestamp":"2026-12-01T02:59:21.123Z","channelId":"directline","serviceUrl":"http://127.0.0.1:3000/","from":{"id":"dlbench-7-1a2b3c4d","role":"user"},"conversation":{"id":"8f3c1a2b-5d6e-4f70-9a1b-2c3d4e5f6a7b"},"text":"dlbench dlbench-7-1a2b3c4d #41","channelData":{"clientActivityID":"dlbench-7-1a2b3c4d.41","webchat:sequence-id":42}}],"watermark":"42"}`)

// BenchmarkDecodeFrame: one stream frame, decoded fully and sparsely (ns and allocations per
// frame).
func BenchmarkDecodeFrame(b *testing.B) {
	for _, bc := range []struct {
		name   string
		sparse bool
	}{{"full", false}, {"sparse", true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(echoFrame)))
			for b.Loop() {
				var s ActivitySet
				if err := s.decode(echoFrame, bc.sparse); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
