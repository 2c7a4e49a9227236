package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/config"
)

// generated returns what fifoq prints for args.
func generated(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("fifoq %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// TestCompletionAndManCoverEveryFlag checks that the completion scripts
// and the man page, generated from the flag sets, name every flag of every
// command, so that a flag added to serve cannot be missing from them.
func TestCompletionAndManCoverEveryFlag(t *testing.T) {
	bash, zsh, fish := generated(t, "completion", "bash"), generated(t, "completion", "zsh"), generated(t, "completion", "fish")
	man := generated(t, "man")
	sawServe := 0
	for _, c := range commands {
		for _, shell := range []string{bash, zsh, fish} {
			if !strings.Contains(shell, c.name) {
				t.Errorf("a completion script lacks the command %s", c.name)
			}
		}
		if !strings.Contains(man, ".SS "+roff("fifoq "+c.name)) {
			t.Errorf("the man page has no section for %s", c.name)
		}
		if c.flags == nil {
			continue
		}
		c.flags().VisitAll(func(f *flag.Flag) {
			if c.name == "serve" {
				sawServe++
			}
			if !strings.Contains(bash, "--"+f.Name+" ") && !strings.Contains(bash, "--"+f.Name+"\"") {
				t.Errorf("bash completion lacks %s --%s", c.name, f.Name)
			}
			if !strings.Contains(zsh, "'--"+f.Name+"[") && !strings.Contains(zsh, "'--"+f.Name+"=[") {
				t.Errorf("zsh completion lacks %s --%s", c.name, f.Name)
			}
			if !strings.Contains(fish, "__fish_seen_subcommand_from "+c.name+"' -l "+f.Name+" ") {
				t.Errorf("fish completion lacks %s --%s", c.name, f.Name)
			}
			if !strings.Contains(man, `\fB\-\-`+roff(f.Name)+`\fR`) {
				t.Errorf("the man page lacks %s --%s", c.name, f.Name)
			}
		})
	}
	// serve's flags include every setting of the config file.
	if sawServe < len(config.Settings)+1 {
		t.Errorf("saw %d flags of serve, fewer than its %d settings and --config", sawServe, len(config.Settings))
	}
	for _, s := range config.Settings {
		if !strings.Contains(man, "Environment: "+roff(s.Env)) {
			t.Errorf("the man page does not give %s's variable %s", s.Flag, s.Env)
		}
	}
	// File flags complete with file names.
	if !strings.Contains(fish, "-l config -d") || !strings.Contains(zsh, ":_files'") {
		t.Error("the config file flag does not complete file names")
	}
}

// TestGeneratedScriptsParse runs each shell's syntax check on its script,
// for the shells this machine has.
func TestGeneratedScriptsParse(t *testing.T) {
	for _, sh := range []struct{ shell, check string }{{"bash", "-n"}, {"zsh", "-n"}, {"fish", "--no-execute"}} {
		path, err := exec.LookPath(sh.shell)
		if err != nil {
			// CI installs every shell and sets FIFOQ_REQUIRE_CLIENTS.
			if os.Getenv("FIFOQ_REQUIRE_CLIENTS") != "" {
				t.Errorf("%s is not installed, and FIFOQ_REQUIRE_CLIENTS is set", sh.shell)
			} else {
				t.Logf("%s is not installed: its script is not syntax-checked", sh.shell)
			}
			continue
		}
		cmd := exec.Command(path, sh.check)
		cmd.Stdin = strings.NewReader(generated(t, "completion", sh.shell))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s %s on the generated script: %v\n%s", sh.shell, sh.check, err, out)
		}
	}
	if groff, err := exec.LookPath("groff"); err == nil {
		cmd := exec.Command(groff, "-man", "-ww", "-z")
		cmd.Stdin = strings.NewReader(generated(t, "man"))
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("groff warns about the man page: %v\n%s", err, out)
		}
	}
}

func TestCompletionRefusesUnknownShell(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"completion", "tcsh"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown shell") {
		t.Errorf("completion tcsh: exit %d, %q", code, stderr.String())
	}
}

func TestVersionSaysModuleCommitAndGo(t *testing.T) {
	out := generated(t, "version")
	for _, want := range []string{"fifoq ", "module: github.com/fifoq/fifoq", "commit: ", "go:     " + runtime.Version()} {
		if !strings.Contains(out, want) {
			t.Errorf("version printed %q, which lacks %q", out, want)
		}
	}
	// A build stamped as the Dockerfile stamps it says its version and
	// commit.
	fifoq, _ := builtBinaries(t)
	stamped, err := exec.Command(fifoq, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fifoq " + testVersion + "\n", "commit: " + testCommit + "\n", "module: github.com/fifoq/fifoq "} {
		if !strings.Contains(string(stamped), want) {
			t.Errorf("the stamped build printed %q, which lacks %q", stamped, want)
		}
	}
}
