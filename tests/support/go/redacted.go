// Test-only (nothing built with Go ships): reads a JSON array of strings on stdin and writes, for each, what
// Go's net/url makes of it: {"ok": url.Parse succeeded, "password": whether it found a password,
// "redacted": URL.Redacted()}. tests/test_redact.py compares kubectl_aicr/kube/redact.py with it.
package main

import (
	"encoding/json"
	"net/url"
	"os"
)

type answer struct {
	OK       bool   `json:"ok"`
	Password bool   `json:"password"`
	Redacted string `json:"redacted"`
}

func main() {
	var texts []string
	if err := json.NewDecoder(os.Stdin).Decode(&texts); err != nil {
		panic(err)
	}
	answers := make([]answer, 0, len(texts))
	for _, text := range texts {
		u, err := url.Parse(text)
		if err != nil {
			answers = append(answers, answer{})
			continue
		}
		_, has := u.User.Password()
		answers = append(answers, answer{OK: true, Password: has, Redacted: u.Redacted()})
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		panic(err)
	}
}
