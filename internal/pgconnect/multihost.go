package pgconnect

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// MultiHostWarning returns what to add to connString when it lists more
// than one server without target_session_attrs=read-write (or primary):
// each connection then takes the first server that answers, which may be
// a standby, where the relay can neither write nor stream its slot. It
// returns "" for one server, for those settings (in the string or in
// PGTARGETSESSIONATTRS), and for a string that does not parse (its error
// is reported where it is used).
func MultiHostWarning(connString string) string {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return ""
	}
	hosts := pgerr.Hosts(cfg)
	if len(hosts) < 2 || writable(cfg.ValidateConnect) {
		return ""
	}
	return fmt.Sprintf("the PostgreSQL URL lists %d servers (%s) without target_session_attrs=read-write: each connection takes the first that answers, "+
		"which may be a standby, where the relay cannot write or stream its slot; add target_session_attrs=read-write "+
		"(?target_session_attrs=read-write in a URL, target_session_attrs=read-write in the keyword form)",
		len(hosts), strings.Join(hosts, ","))
}

// writable reports whether validate is pgconn's check of
// target_session_attrs read-write or primary.
func writable(validate pgconn.ValidateConnectFunc) bool {
	if validate == nil {
		return false
	}
	p := reflect.ValueOf(validate).Pointer()
	return p == reflect.ValueOf(pgconn.ValidateConnectTargetSessionAttrsReadWrite).Pointer() ||
		p == reflect.ValueOf(pgconn.ValidateConnectTargetSessionAttrsPrimary).Pointer()
}
