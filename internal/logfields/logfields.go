package logfields

import (
	"strconv"
	"strings"
)

// Parse returns the key=value pairs of a slog text line. A quoted value is
// unquoted as slog's TextHandler quotes it (strconv.Quote); a value whose
// quoting is broken (a line cut short) is kept as it stands, without its
// opening quote. A later key wins over an earlier one of the same name.
func Parse(line string) map[string]string {
	f := make(map[string]string)
	for line != "" {
		line = strings.TrimLeft(line, " ")
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			break
		}
		key, rest := line[:eq], line[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			// The closing quote, skipping escaped characters.
			end := 1
			for end < len(rest) && rest[end] != '"' {
				if rest[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end+1, len(rest))
			v, err := strconv.Unquote(rest[:end])
			if err != nil {
				v = strings.TrimSuffix(rest[1:end], `"`)
			}
			val, line = v, rest[end:]
		} else {
			sp := strings.IndexByte(rest, ' ')
			if sp < 0 {
				sp = len(rest)
			}
			val, line = rest[:sp], rest[sp:]
		}
		f[key] = val
	}
	return f
}
