package poller

import (
	"os"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// sharedPG is the package's PostgreSQL, for the tests of RowLoader: each
// test that needs one has a database of its own on it.
var sharedPG = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(sharedPG.Run(m)) }
