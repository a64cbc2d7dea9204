package slot

import (
	"os"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// sharedPG is the package's PostgreSQL: each test that needs one has a
// database of its own on it, and names any slot it makes after that
// database (the relay's default slot, cdc_relay, would be shared by all).
var sharedPG = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(sharedPG.Run(m)) }
