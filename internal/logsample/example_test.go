package logsample_test

import (
	"fmt"
	"time"

	"github.com/indexkit/indexkit/internal/logsample"
)

func Example() {
	s := logsample.New(time.Minute)
	for i := range 1000 {
		if ok, held := s.Allow("announce refused"); ok {
			fmt.Println("logged event", i, "with", held, "held back before it")
		}
	}
	// Output: logged event 0 with 0 held back before it
}
