// Package failpoint is the project's one fault-injection seam. Code that
// must survive a failure or a kill between two steps marks the point with
// Hit("package/step"); a test turns failpoints on with Enable and decides,
// per name, whether the step fails (an error) or what happens there (a
// kill, a cancellation, a pause). With none enabled, Hit is one atomic
// load: the seam costs nothing in production and is in no public API.
package failpoint

import "sync/atomic"

var hook atomic.Pointer[func(name string) error]

// Hit reports the error the enabled hook returns for name, or nil when no
// hook is enabled. Callers fail their step with it as with the step's own
// error.
func Hit(name string) error {
	if h := hook.Load(); h != nil {
		return (*h)(name)
	}
	return nil
}

// Enable makes fn see every Hit until restore is called (restore puts back
// the hook that was enabled before). Tests that enable failpoints must not
// run in parallel with others that reach the same points.
func Enable(fn func(name string) error) (restore func()) {
	old := hook.Swap(&fn)
	return func() { hook.Store(old) }
}
