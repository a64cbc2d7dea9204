// Package syncbuf is a bytes.Buffer that several goroutines may write and
// read: for a process's output or a logger's, read by a test.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it. It is safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
