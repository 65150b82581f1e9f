package main

import (
	"fmt"
	"io"
	"math"
	"path"
	"strings"
	"unicode/utf8"
)

const none = "—"

const legend = "store/raw = store rate ÷ raw engine rate, same run (1.00 = raw speed, higher is better); " +
	"cpu store/raw = store CPU ÷ raw CPU per unit of work (lower is better); " + none + " = none"

// footprint lists the store-side metrics shown in columns of their own, when
// some row of the table reports them.
var footprint = []string{"disk-B/mh", "size-B/mh", "rss-B/mh", "heap-B/mh"}

func writeTables(w io.Writer, pkgs []*pkgResults) error {
	for i, pr := range pkgs {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := writeTable(w, pr); err != nil {
			return err
		}
	}
	return nil
}

func writeTable(w io.Writer, pr *pkgResults) error {
	title := "(no pkg: line)"
	if pr.path != "" {
		title = path.Base(pr.path) + " (" + pr.path + ")"
	}

	header := []string{"operation", "params", "store", "raw", "store/raw", "cpu store/raw"}
	right := []bool{false, false, true, true, true, true}
	var extra []string
	for _, u := range footprint {
		for _, r := range pr.rows {
			if _, ok := r.store.get(u); ok {
				extra = append(extra, u)
				break
			}
		}
	}
	for _, u := range extra {
		header = append(header, u)
		right = append(right, true)
	}

	cells := [][]string{header}
	for _, r := range pr.rows {
		sRate, sOK := r.store.rate()
		rRate, rOK := r.raw.rate()
		row := []string{r.op, r.params, rateCell(sRate, sOK), rateCell(rRate, rOK), none, none}
		if sOK && rOK && sRate.unit == rRate.unit && rRate.value != 0 {
			row[4] = fmt.Sprintf("%.2f", sRate.value/rRate.value)
		}
		if sCPU, ok := r.store.cpu(); ok {
			if rCPU, ok := r.raw.cpu(); ok && sCPU.unit == rCPU.unit && rCPU.value != 0 {
				row[5] = fmt.Sprintf("%.2f", sCPU.value/rCPU.value)
			}
		}
		for _, u := range extra {
			cell := none
			if v, ok := r.store.get(u); ok {
				cell = human(v)
			}
			row = append(row, cell)
		}
		cells = append(cells, row)
	}

	width := make([]int, len(header))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	b.WriteString(title + "\n\n")
	line := func(row []string) {
		var l strings.Builder
		for i, c := range row {
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if right[i] {
				l.WriteString(pad + c)
			} else {
				l.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(cells[0])
	rule := make([]string, len(header))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule)
	for _, row := range cells[1:] {
		line(row)
	}
	b.WriteString("\n" + legend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func rateCell(m metric, ok bool) string {
	if !ok {
		return none
	}
	return human(m.value) + " " + m.unit
}

// human formats v with three or four significant digits and a K, M, G, T,
// P or E suffix for thousands and up: 312400 is "312.4K", 1231000 "1.23M".
func human(v float64) string {
	abs := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprint(v)
	case abs < 1:
		return fmt.Sprintf("%.3g", v)
	case abs < 10:
		return fmt.Sprintf("%.2f", v)
	case abs < 100:
		return fmt.Sprintf("%.1f", v)
	case abs < 999.5:
		return fmt.Sprintf("%.0f", v)
	}
	const suffixes = "KMGTPE"
	for i := range len(suffixes) {
		m := v / math.Pow(1000, float64(i+1))
		switch {
		case math.Abs(m) < 9.995:
			return fmt.Sprintf("%.2f%c", m, suffixes[i])
		case math.Abs(m) < 999.95 || i == len(suffixes)-1:
			return fmt.Sprintf("%.1f%c", m, suffixes[i])
		}
	}
	panic("unreachable")
}
