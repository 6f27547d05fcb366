package sortkeys

import (
	"encoding/json"
	"fmt"
	"os"
)

type state struct{}

func newReplay(opts Options) *Replay    { return &Replay{st: &state{}} }
func (r *Replay) apply(ev Event) error { return nil }
func (r *Replay) order() []Item        { return nil }
func (r *Replay) names() []string      { return nil }
func (r *Replay) screen() []Bubble     { return nil }
func (r *Replay) length() int          { return 0 }

func loadVector(path string) (*Vector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v Vector
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("sortkeys: %s: %w", path, err)
	}
	return &v, nil
}
