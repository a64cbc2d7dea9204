package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
)

// baseBackup copies c's data directory to dst while c runs, as a
// low-level base backup: the backup starts and stops on conn (a
// non-exclusive backup belongs to its session), and its label (and
// tablespace map) go into the copy, so that a server started on dst
// replays the WAL from the backup's start before it opens.
func (c *Cluster) baseBackup(ctx context.Context, conn *pgx.Conn, version int, dst string) error {
	start, stop := "SELECT pg_backup_start($1, true)", "SELECT labelfile, coalesce(spcmapfile, '') FROM pg_backup_stop(false)"
	if version < 150000 {
		start, stop = "SELECT pg_start_backup($1, true, false)", "SELECT labelfile, coalesce(spcmapfile, '') FROM pg_stop_backup(false, false)"
	}
	if _, err := conn.Exec(ctx, start, "cdc-relay pgtemp standby"); err != nil {
		return fmt.Errorf("start the base backup: %w", err)
	}
	copyErr := copyForBackup(c.data(), dst)
	var label, spcmap string
	if err := conn.QueryRow(ctx, stop).Scan(&label, &spcmap); err != nil {
		return fmt.Errorf("stop the base backup: %w", err)
	}
	if copyErr != nil {
		return fmt.Errorf("copy the data directory: %w", copyErr)
	}
	if err := os.WriteFile(filepath.Join(dst, "backup_label"), []byte(label), 0o600); err != nil {
		return err
	}
	if spcmap != "" {
		return os.WriteFile(filepath.Join(dst, "tablespace_map"), []byte(spcmap), 0o600)
	}
	return nil
}

// emptied are the directories of a data directory whose contents a base
// backup leaves out (as pg_basebackup does); they are copied empty. In
// pg_wal, subdirectories are kept (empty).
var emptied = map[string]bool{
	"pg_wal": true, "pg_replslot": true, "pg_dynshmem": true, "pg_notify": true,
	"pg_serial": true, "pg_snapshots": true, "pg_stat_tmp": true, "pg_subtrans": true,
}

// leftOut are the files of a data directory that a base backup leaves out.
var leftOut = map[string]bool{
	"postmaster.pid": true, "postmaster.opts": true, "backup_label": true, "tablespace_map": true,
}

// copyForBackup copies the running data directory src to dst (which must
// not exist), leaving out what a base backup leaves out. A file that goes
// away during the copy is skipped: the WAL replayed from the backup's start
// accounts for it. Tablespaces are not supported.
func copyForBackup(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		parent := filepath.Dir(rel)
		switch {
		case d.IsDir():
			if emptied[parent] && parent != "pg_wal" {
				return fs.SkipDir
			}
			return os.Mkdir(target, 0o700)
		case leftOut[rel] || emptied[parent] || filepath.Dir(parent) == "pg_wal" || d.Name() == "pg_internal.init":
			return nil
		case d.Type().IsRegular():
			return copyBackupFile(path, target)
		}
		return fmt.Errorf("%s: only files and directories can be copied (no tablespaces)", rel)
	})
}

// copyBackupFile copies the regular file src to dst, mode 0600; a file
// that went away is skipped.
func copyBackupFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// chownData gives c's data directory to the cluster's owner (when pgtemp
// runs the server as another user), with the modes PostgreSQL requires.
func (c *Cluster) chownData() error {
	return filepath.WalkDir(c.data(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if d.IsDir() {
			mode = 0o700
		}
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		if c.cred == nil {
			return nil
		}
		return os.Lchown(path, int(c.cred.Uid), int(c.cred.Gid))
	})
}
