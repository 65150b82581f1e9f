package errkind_test

import (
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/internal/errkind"
)

// Two packages each declare their sentinel of a kind; an error of one
// matches the other's, and keeps the message that names its package.
func Example() {
	ingestErr := errkind.New(errkind.InvalidOption, "ingest: invalid option")
	scatterErr := errkind.New(errkind.InvalidOption, "scatter: invalid option")
	storeClosed := errkind.New(errkind.Closed, "store: closed")

	err := fmt.Errorf("%w: WithBatchSize(-1): must be positive", ingestErr)
	fmt.Println(err)
	fmt.Println(errors.Is(err, scatterErr))
	fmt.Println(errors.Is(err, storeClosed))
	k, _ := errkind.Of(err)
	fmt.Println(k)
	// Output:
	// ingest: invalid option: WithBatchSize(-1): must be positive
	// true
	// false
	// invalid option
}
