package ops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// DefaultEnvFile is where `hookline run` writes the local endpoints, in the
// working directory it was started from.
const DefaultEnvFile = ".hookline/endpoints.env"

// EnvFileVar names a variable that points at another endpoints file.
const EnvFileVar = "HOOKLINE_ENV_FILE"

// ParseEnvFile reads KEY=VALUE lines. Blank lines and lines starting with
// '#' are skipped, an "export " prefix is allowed and one pair of matching
// quotes around a value is removed.
func ParseEnvFile(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("ops: env file line %d is not KEY=VALUE", n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ops: read env file: %w", err)
	}
	return out, nil
}

// LoadEnvFile sets, from the endpoints file, every variable that lookup
// does not already see, and returns the file it read ("" when none). The
// file is $HOOKLINE_ENV_FILE when set (it must then exist), else
// [DefaultEnvFile] when present.
func LoadEnvFile(lookup func(string) (string, bool), setenv func(k, v string) error) (string, error) {
	path, explicit := lookup(EnvFileVar)
	if !explicit || path == "" {
		path, explicit = DefaultEnvFile, false
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ops: env file: %w", err)
	}
	defer f.Close()
	vars, err := ParseEnvFile(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	for k, v := range vars {
		if cur, ok := lookup(k); ok && cur != "" {
			continue
		}
		if err := setenv(k, v); err != nil {
			return "", fmt.Errorf("ops: set %s from %s: %w", k, path, err)
		}
	}
	return path, nil
}
