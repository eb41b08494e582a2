// Command docker_mount reads one `docker run --mount` value on stdin and prints its key=value fields as
// JSON pairs, parsed as docker/cli parses them (opts/mount.go, MountOpt.Set): the whole value is one
// record of encoding/csv (default Reader: ',' separator, no lazy quotes, no trimming), each field split
// at its first '=' by strings.Cut. A test-only oracle for tests/test_reproduce.py; nothing ships.
package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	value, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fields, err := csv.NewReader(strings.NewReader(string(value))).Read()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pairs := [][2]string{}
	for _, field := range fields {
		key, val, ok := strings.Cut(field, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "invalid field '%s' must be a key=value pair\n", field)
			os.Exit(1)
		}
		pairs = append(pairs, [2]string{key, val})
	}
	if err := json.NewEncoder(os.Stdout).Encode(pairs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
