package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// imageSpec is how the Dockerfile's final stage says the container runs.
// The release's image takes its configuration from here, so that the two
// images cannot drift apart; what the stage copies in is checked against
// what the release puts in (release_test.go).
type imageSpec struct {
	Entrypoint, Cmd []string
	User            string   // "UID:GID"
	Volumes         []string // absolute paths
	Expose          []string // "PORT/PROTO"
	Env             []string // "KEY=VALUE"
	WorkingDir      string
	StopSignal      string
	Labels          map[string]string // as written: ${VAR} is not expanded
	Healthcheck     *healthcheck
	Copies          []string // the stage's COPY instructions, as written
}

// healthcheck is a HEALTHCHECK instruction, in the form Docker keeps it in
// an image's config (durations in nanoseconds when encoded).
type healthcheck struct {
	Test        []string      `json:"Test"`
	Interval    time.Duration `json:"Interval,omitempty"`
	Timeout     time.Duration `json:"Timeout,omitempty"`
	StartPeriod time.Duration `json:"StartPeriod,omitempty"`
	Retries     int           `json:"Retries,omitempty"`
}

// readDockerfile parses the final stage of the Dockerfile at name. It
// knows the instructions a stage FROM scratch can have; any other (RUN,
// ADD, SHELL, ONBUILD) is an error, since the release could not do the
// same.
func readDockerfile(name string) (*imageSpec, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	lines := dockerfileLines(data)
	last := -1 // only the last stage counts
	for i, line := range lines {
		if word, _, _ := strings.Cut(line, " "); strings.EqualFold(word, "FROM") {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	spec := &imageSpec{Labels: map[string]string{}}
	for _, line := range lines[last+1:] {
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		instr := strings.ToUpper(word)
		if err := spec.add(instr, rest); err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", name, instr, rest, err)
		}
	}
	if len(spec.Entrypoint) == 0 {
		return nil, fmt.Errorf("%s: no final stage with an ENTRYPOINT", name)
	}
	return spec, nil
}

// add records one instruction of the stage.
func (s *imageSpec) add(instr, rest string) error {
	var err error
	switch instr {
	case "ARG":
	case "COPY":
		s.Copies = append(s.Copies, rest)
	case "ENTRYPOINT":
		s.Entrypoint, err = execForm(rest)
	case "CMD":
		s.Cmd, err = execForm(rest)
	case "USER":
		s.User = rest
	case "VOLUME":
		var v []string
		v, err = execForm(rest)
		s.Volumes = append(s.Volumes, v...)
	case "EXPOSE":
		for _, p := range strings.Fields(rest) {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			s.Expose = append(s.Expose, p)
		}
	case "ENV":
		var kv [][2]string
		if kv, err = keyValues(rest); err == nil {
			for _, p := range kv {
				s.Env = append(s.Env, p[0]+"="+p[1])
			}
		}
	case "LABEL":
		var kv [][2]string
		if kv, err = keyValues(rest); err == nil {
			for _, p := range kv {
				s.Labels[p[0]] = p[1]
			}
		}
	case "WORKDIR":
		s.WorkingDir = rest
	case "STOPSIGNAL":
		s.StopSignal = rest
	case "HEALTHCHECK":
		s.Healthcheck, err = parseHealthcheck(rest)
	default:
		err = fmt.Errorf("the release cannot build an image with %s", instr)
	}
	return err
}

// dockerfileLines returns the Dockerfile's instructions: continuation
// lines joined, comments and blank lines dropped.
func dockerfileLines(data []byte) []string {
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	return lines
}

// execForm parses a JSON array of strings (the exec form).
func execForm(s string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("not an exec-form JSON array: %w", err)
	}
	return out, nil
}

// keyValues parses KEY=VALUE pairs, a value either bare or in double
// quotes, in their order.
func keyValues(s string) ([][2]string, error) {
	var out [][2]string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("want KEY=VALUE pairs at %q", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("value of %s: %w", k, err)
			}
			if v, err = strconv.Unquote(q); err != nil {
				return nil, err
			}
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out = append(out, [2]string{k, v})
		s = rest
	}
	return out, nil
}

// parseHealthcheck parses "[--OPTION=VALUE ...] CMD [exec form]".
func parseHealthcheck(s string) (*healthcheck, error) {
	opts, cmd, ok := strings.Cut(" "+s, " CMD ")
	if !ok {
		return nil, fmt.Errorf("want an exec-form CMD")
	}
	test, err := execForm(strings.TrimSpace(cmd))
	if err != nil {
		return nil, err
	}
	h := &healthcheck{Test: append([]string{"CMD"}, test...)}
	for _, o := range strings.Fields(opts) {
		k, v, _ := strings.Cut(o, "=")
		var err error
		switch k {
		case "--interval":
			h.Interval, err = time.ParseDuration(v)
		case "--timeout":
			h.Timeout, err = time.ParseDuration(v)
		case "--start-period":
			h.StartPeriod, err = time.ParseDuration(v)
		case "--retries":
			h.Retries, err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unknown option %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	return h, nil
}

// owner parses USER as numeric ids: the release writes the owner of the
// volume's directory, and a name would need the image's /etc/passwd to be
// resolved at run time (and Kubernetes' runAsNonRoot cannot check a name).
func (s *imageSpec) owner() (uid, gid int, err error) {
	u, g, ok := strings.Cut(s.User, ":")
	if !ok {
		return 0, 0, fmt.Errorf("USER %q: want numeric UID:GID", s.User)
	}
	if uid, err = strconv.Atoi(u); err == nil {
		gid, err = strconv.Atoi(g)
	}
	if err != nil || uid <= 0 || gid <= 0 {
		return 0, 0, fmt.Errorf("USER %q: want numeric UID:GID of a user other than root", s.User)
	}
	return uid, gid, nil
}
