// Package layouttest is the conformance suite of keyspace.LayoutStore
// backends: every backend (the layout file, etcd) runs [Run] and so keeps
// the same promises: a publish is a compare-and-swap on the revision read,
// a watch sees every layout that stays in force, a layout that does not
// validate is refused and leaves the one in force alone.
//
//	func TestConformance(t *testing.T) {
//		layouttest.Run(t, func(t *testing.T) keyspace.LayoutStore {
//			return &keyspace.FileStore{Path: filepath.Join(t.TempDir(), "layout.json"), Interval: 10 * time.Millisecond}
//		})
//	}
package layouttest
