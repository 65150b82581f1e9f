package indexercmd

import "errors"

// ErrAdminNeedsToken is wrapped by [Main] when -admin listens on anything
// but loopback (0.0.0.0, ::, another IP, a host name other than
// localhost) and no admin token is set: whoever reaches the admin API
// could freeze the node, assign publishers and hand them off.
var ErrAdminNeedsToken = errors.New("the admin API needs a token when it listens beyond loopback")
