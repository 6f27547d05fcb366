package client_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReadmeShowsTheExample: the README's section "In tests" shows readme_example_test.go as it is.
func TestReadmeShowsTheExample(t *testing.T) {
	example, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("```go\n"+string(example)+"```\n")) {
		t.Fatal("README.md does not show readme_example_test.go as it is")
	}
}
