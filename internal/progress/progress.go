// Package progress draws a one-line progress report (bytes done, item rate,
// ETA) on a terminal, redrawn at most four times a second, and stays silent
// when output is not a terminal. Counters are atomic, so hot loops may call
// Add from any goroutine at negligible cost; drawing happens on a ticker.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Interval is the minimum time between two redraws.
const Interval = 250 * time.Millisecond

// Bar is one progress line. The zero value is not usable; call New. A nil
// *Bar is valid and does nothing, so callers need not check.
type Bar struct {
	w       io.Writer
	label   string
	unit    string
	total   atomic.Int64
	done    atomic.Int64
	items   atomic.Int64
	start   time.Time
	enabled bool

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex // serialises drawing
	width    int        // width of the last line drawn, to blank it
}

// New starts a progress line on w for a job of total bytes (0 or less when
// unknown: no ETA is shown). label prefixes the line. When enabled is
// false nothing is ever written; pass Enabled(f, quiet) to follow the
// terminal rule.
func New(w io.Writer, total int64, label string, enabled bool) *Bar {
	b := &Bar{w: w, label: label, unit: "items", start: time.Now(), enabled: enabled && w != nil, stop: make(chan struct{})}
	b.total.Store(total)
	if b.enabled {
		b.wg.Add(1)
		go b.loop()
	}
	return b
}

// SetUnit names what AddItems counts ("edges", "nodes"); it appears in the
// rate. Call it before the first redraw.
func (b *Bar) SetUnit(unit string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.unit = unit
	b.mu.Unlock()
}

// SetLabel changes the prefix, e.g. when a job moves to its next phase.
func (b *Bar) SetLabel(label string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.label = label
	b.mu.Unlock()
}

// SetTotal changes the expected number of bytes.
func (b *Bar) SetTotal(total int64) {
	if b != nil {
		b.total.Store(total)
	}
}

// Add records n more bytes done.
func (b *Bar) Add(n int64) {
	if b != nil {
		b.done.Add(n)
	}
}

// AddItems records n more items (edges, nodes) processed.
func (b *Bar) AddItems(n int64) {
	if b != nil {
		b.items.Add(n)
	}
}

// Bytes returns the bytes recorded so far.
func (b *Bar) Bytes() int64 {
	if b == nil {
		return 0
	}
	return b.done.Load()
}

// Items returns the items recorded so far.
func (b *Bar) Items() int64 {
	if b == nil {
		return 0
	}
	return b.items.Load()
}

// Elapsed is the time since New.
func (b *Bar) Elapsed() time.Duration {
	if b == nil {
		return 0
	}
	return time.Since(b.start)
}

// Done stops redrawing and erases the line, leaving the terminal as it was.
// It is safe to call more than once.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.stopOnce.Do(func() {
		close(b.stop)
		b.wg.Wait()
		if b.enabled {
			b.mu.Lock()
			if b.width > 0 {
				fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", b.width))
			}
			b.mu.Unlock()
		}
	})
}

func (b *Bar) loop() {
	defer b.wg.Done()
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.draw()
		}
	}
}

func (b *Bar) draw() {
	b.mu.Lock()
	defer b.mu.Unlock()
	line := b.line(time.Since(b.start))
	pad := ""
	if n := b.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(b.w, "\r%s%s", line, pad)
	b.width = len(line)
}

// line renders the progress text for an elapsed time; it is separate from
// draw so that tests can check it without a terminal.
func (b *Bar) line(elapsed time.Duration) string {
	done, total, items := b.done.Load(), b.total.Load(), b.items.Load()
	sec := elapsed.Seconds()
	var sb strings.Builder
	sb.WriteString(b.label)
	sb.WriteString(": ")
	sb.WriteString(Bytes(done))
	if total > 0 {
		fmt.Fprintf(&sb, " / %s (%.0f%%)", Bytes(total), 100*float64(min(done, total))/float64(total))
	}
	if sec > 0 {
		fmt.Fprintf(&sb, ", %s/s", Bytes(int64(float64(done)/sec)))
		if items > 0 {
			fmt.Fprintf(&sb, ", %s %s/s", Count(float64(items)/sec), b.unit)
		}
		if total > 0 && done > 0 && done < total {
			eta := time.Duration(float64(total-done) / (float64(done) / sec) * float64(time.Second))
			fmt.Fprintf(&sb, ", ETA %s", eta.Round(time.Second))
		}
	}
	return sb.String()
}

// Bytes formats a byte count with a binary unit, e.g. "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Count formats a count with a decimal suffix, e.g. "12.3M".
func Count(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.2fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// Enabled reports whether progress should be drawn on f: f is a terminal
// and the user did not ask for quiet.
func Enabled(f *os.File, quiet bool) bool {
	return !quiet && f != nil && IsTerminal(f.Fd())
}
