package pipeline

import (
	"os"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// sharedPG is the package's PostgreSQL, started by the first test that
// needs one: each such test has a database of its own on it, and names
// any slot it makes after that database.
var sharedPG = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(sharedPG.Run(m)) }
