package promtext

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Sum fetches url and returns the sum of the samples of the metric name,
// with or without labels. It fails when the page cannot be fetched, a
// sample does not parse, or the page has no sample of name.
func Sum(ctx context.Context, hc *http.Client, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics %s: %s", url, resp.Status)
	}
	return sum(bufio.NewScanner(resp.Body), url, name)
}

func sum(sc *bufio.Scanner, url, name string) (float64, error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var total float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics %s: %q: %w", url, line, err)
		}
		total += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics %s: %w", url, err)
	}
	if !found {
		return 0, fmt.Errorf("metrics %s: no %s", url, name)
	}
	return total, nil
}
