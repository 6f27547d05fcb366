package sortkeys

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conformanceDir is $SORTKEYS_CONFORMANCE_DIR, else shared/conformance beside the repository.
func conformanceDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SORTKEYS_CONFORMANCE_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "conformance")
}

func vectorFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("vectors under %s: %v (for the shared ones, set SORTKEYS_CONFORMANCE_DIR)", dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("no conformance vectors under %s", dir)
	}
	return files
}

// firstDiff describes the first position where got and want differ.
func firstDiff(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		g, w := "<end>", "<end>"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("position %d: got %s, want %s\n got:  %v\n want: %v", i, g, w, got, want)
		}
	}
	return ""
}

func bubbleNames(bs []Bubble) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

func runVector(t *testing.T, v *Vector, newRun func(Options) *Replay) {
	t.Helper()
	profile, err := ParseProfile(v.Profile)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(Options{Profile: profile, UserID: v.UserID, ScreenHistory: profile == GenC})
	checkpoint := 0
	for i, ev := range v.Events {
		if ev.Op != OpExpect {
			if err := r.Apply(ev.Event); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			continue
		}
		checkpoint++
		if d := firstDiff(r.Names(), ev.Order); d != "" {
			t.Fatalf("checkpoint %d (event %d) order: %s", checkpoint, i, d)
		}
		if ev.Screen != nil {
			if d := firstDiff(bubbleNames(r.Screen()), ev.Screen); d != "" {
				t.Fatalf("checkpoint %d (event %d) screen: %s", checkpoint, i, d)
			}
		}
	}
	if checkpoint == 0 {
		t.Fatalf("vector has no checkpoint")
	}
}

func TestConformanceVectors(t *testing.T) {
	runVectorDir(t, conformanceDir(t))
}

// TestProjectVectors runs the project's own vectors (testdata/vectors, in the conformance format):
// cases found in trials against WEBCHAT-ORDERING.md that the shared vectors do not cover.
func TestProjectVectors(t *testing.T) {
	runVectorDir(t, filepath.Join("testdata", "vectors"))
}

func runVectorDir(t *testing.T, dir string) {
	for _, path := range vectorFiles(t, dir) {
		rel, _ := filepath.Rel(dir, path)
		t.Run(strings.TrimSuffix(rel, ".json"), func(t *testing.T) {
			t.Parallel()
			v, err := LoadVector(path)
			if err != nil {
				t.Fatal(err)
			}
			runVector(t, v, New)
		})
	}
}
