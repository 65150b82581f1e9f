// Package browsertest starts headless Chromium for the tests that drive a
// real browser (the front end's page, the browser attacks on the APIs
// open without a token): [Chromium] finds Debian's chromium, [Start] runs
// it in its own process group with a fresh profile and the flags that
// keep it off the network, and returns a chromedp browser context.
//
// Without chromium a test skips, or fails when CI is set (make test and
// .ci/run set it; .ci/services installs chromium). Each [Start] has its
// own browser; stop it with the function Start returns (Start also
// registers it with t.Cleanup), which closes the browser and kills what
// is left of its process group by its process ID, never by name.
package browsertest
