package findings

import (
	"fmt"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

// BenchmarkCheck measures a log of plain bot messages where every 50th arrives a little late.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		evs := make([]sortkeys.Event, n)
		for i := range evs {
			ms := i * 10
			if i%50 == 0 && i > 0 {
				ms -= 25
			}
			evs[i] = ts(fmt.Sprintf("c|%07d", i+1), fmt.Sprintf(`"2024-05-01T10:%02d:%02d.%03dZ"`, ms/60000, ms/1000%60, ms%1000))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Check(evs, Options{})
			}
		})
	}
}
