package pgtemp

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Copy makes a cold copy of the cluster, as a backup taken with
// pg_basebackup and restored is: it stops the server (fast), copies its
// data directory without the replication slots (the contents of
// pg_replslot, which pg_basebackup leaves out; a storage snapshot or a
// plain copy of the files would carry them), and starts both, the copy on
// a port and socket directory of its own. The copy has the same system
// identifier and databases, and no slot. Stop the copy as any cluster.
func (c *Cluster) Copy(ctx context.Context) (*Cluster, error) {
	if err := c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop"); err != nil {
		return nil, err
	}
	cp, err := c.coldCopy()
	if startErr := c.start(context.WithoutCancel(ctx)); startErr != nil {
		if cp != nil {
			cp.remove()
		}
		return nil, fmt.Errorf("start the copied cluster again: %w", startErr)
	}
	if err != nil {
		return nil, err
	}
	if err := cp.start(context.WithoutCancel(ctx)); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

// coldCopy leaves a new cluster directory, owned as c's, holding a copy of
// c's stopped data directory without its slots, configured for a port and
// socket directory of its own; it does not start it.
func (c *Cluster) coldCopy() (*Cluster, error) {
	cp := &Cluster{bin: c.bin, cred: c.cred, opts: c.opts}
	var err error
	if cp.dir, err = os.MkdirTemp("", "cdc-relay-pg-copy-"); err != nil {
		return nil, err
	}
	cp.logFile = filepath.Join(cp.dir, "postgres.log")
	if err := cp.own(cp.dir); err != nil {
		cp.remove()
		return nil, err
	}
	if err := filepath.WalkDir(c.data(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.data(), path)
		if filepath.Dir(rel) == "pg_replslot" || rel == "postmaster.pid" {
			return skip(d)
		}
		return cp.copyEntry(path, filepath.Join(cp.data(), rel), d)
	}); err != nil {
		cp.remove()
		return nil, fmt.Errorf("copy the data directory of %s: %w", c.data(), err)
	}
	if err := cp.configure(); err != nil {
		cp.remove()
		return nil, err
	}
	return cp, nil
}

// skip leaves out the entry d of a walk: its whole tree, if a directory.
func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// copyEntry copies the file, directory or symbolic link d at src to dst,
// with its permissions, owned by the cluster's user.
func (c *Cluster) copyEntry(src, dst string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	switch {
	case d.IsDir():
		err = os.Mkdir(dst, info.Mode().Perm())
	case d.Type()&fs.ModeSymlink != 0:
		var target string
		if target, err = os.Readlink(src); err == nil {
			err = os.Symlink(target, dst)
		}
	default:
		err = copyFile(src, dst, info.Mode().Perm())
	}
	if err != nil {
		return err
	}
	return c.own(dst)
}

// copyFile copies the regular file src to a new file dst with mode perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// own gives path (not following a symbolic link) to the user the cluster
// runs as, when that is not the process's own.
func (c *Cluster) own(path string) error {
	if c.cred == nil {
		return nil
	}
	return os.Lchown(path, int(c.cred.Uid), int(c.cred.Gid))
}
