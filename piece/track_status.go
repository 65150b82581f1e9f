package piece

import (
	"context"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

func (t *Tracker) statusLoop(ctx context.Context) {
	tick := time.NewTicker(t.cfg.statusInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.writeStatuses(ctx)
		}
	}
}

// progressLogEvery is how often a status line is logged for each walk in
// progress.
const progressLogEvery = 30 * time.Second

// writeStatuses copies each publisher's walk status into the statuses of its
// providers.
func (t *Tracker) writeStatuses(ctx context.Context) {
	now := time.Now()
	t.mu.Lock()
	logProgress := now.Sub(t.lastLog) >= progressLogEvery
	if logProgress {
		t.lastLog = now
	}
	t.mu.Unlock()
	for _, st := range t.ing.Statuses() {
		if ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		url := ""
		if p := t.pubs[st.Publisher]; p != nil {
			url = p.url
		}
		elsewhere := t.elsewhere[st.Publisher]
		t.mu.Unlock()
		if elsewhere {
			// Another Tracker on the Store walks it and writes its
			// statuses; this one's view of the walk is stale.
			continue
		}
		w := writtenStatus{address: url, head: st.Head, lastHead: st.LastHead}
		switch {
		case st.Walking && st.Head.Defined():
			w.text = "walking: applying advertisements as they are fetched"
		case !st.Walking && st.Head.Defined() && st.Failures == 0:
			w.text = "walking: waiting for its next turn"
		case st.Walking && st.LastHead.Defined() && st.Failures == 0:
			// Asking the publisher for its head, with no new head known:
			// as of now the provider is up to date. (A configured
			// publisher is asked at every poll; its status should not
			// flicker.)
			w.text = "up to date"
		case st.Walking:
			w.text = "walking: fetching the head"
		case st.Failures > 0:
			w.text = fmt.Sprintf("walk failed %d time(s) in a row; retrying at %s", st.Failures, st.RetryAt.UTC().Format(time.RFC3339))
		case st.LastHead.Defined() && !st.Head.Defined():
			w.text = "up to date"
		case st.Head.Defined():
			w.text = "walk interrupted; resuming"
		default:
			w.text = "waiting for the first walk"
		}
		if st.LastError != nil {
			w.lastError = st.LastError.Error()
		}
		if logProgress && (st.Walking || st.Failures > 0) {
			t.log.Info("walk status", "publisher", st.Publisher.String(), "status", w.text,
				"walked", st.AdsWalked, "applied", st.AdsApplied, "pending", st.Pending)
		}
		for _, p := range t.providersOf(st.Publisher) {
			t.write(ctx, p, w, true)
		}
	}
}

// write writes the fields of w that differ from what was last written for
// provider. A walk error is written only when it changed, so that an error
// the applier recorded (entries not retrievable) stays until the next walk
// error; withHeads says whether w carries walk positions.
func (t *Tracker) write(ctx context.Context, provider peer.ID, w writtenStatus, withHeads bool) {
	t.mu.Lock()
	old, had := t.written[provider]
	t.mu.Unlock()
	var u StatusUpdate
	if !had || w.address != old.address {
		u.Address = &w.address
	}
	if !had || w.text != old.text {
		u.Text = &w.text
	}
	if w.lastError != "" && w.lastError != old.lastError {
		u.LastError = &w.lastError
	}
	if withHeads {
		if !had || !w.head.Equals(old.head) {
			u.Head = &w.head
		}
		if !had || !w.lastHead.Equals(old.lastHead) {
			u.LastHead = &w.lastHead
		}
	}
	if u == (StatusUpdate{}) {
		return
	}
	if err := t.updateStatus(ctx, provider, u); err != nil {
		if ctx.Err() == nil {
			t.log.Warn("writing status failed", "provider", provider.String(), "error", err)
		}
		return
	}
	if w.lastError == "" {
		w.lastError = old.lastError
	}
	t.mu.Lock()
	t.written[provider] = w
	t.mu.Unlock()
}

// walkDone is the ingest hook called when a walk reached its head.
func (t *Tracker) walkDone(pub peer.ID, head cid.Cid, ads int, d time.Duration) {
	t.log.Info("walk done", "publisher", pub.String(), "cid", head.String(), "ads", ads, "took", d.Round(time.Millisecond))
}
