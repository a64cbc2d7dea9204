package progress

import (
	"os"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// pg is the package's PostgreSQL: each test has a database of its own.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
