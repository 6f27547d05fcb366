package bolt

import (
	"path/filepath"
	"testing"

	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/storetest"
)

func openForSuite(t testing.TB, dir string, cfg storetest.Config) store.Store {
	t.Helper()
	s, err := Open(filepath.Join(dir, "directline.db"), Options{OnCommit: cfg.OnCommit, Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Factory{Open: openForSuite})
}
