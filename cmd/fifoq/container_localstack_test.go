package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// composeLocalStackDir is the example of an application written for
// LocalStack whose localstack service is now fifoq's image.
const composeLocalStackDir = "../../examples/compose-localstack"

// TestContainerReplacesLocalStack runs fifoq as the localstack service of
// examples/compose-localstack would run in its container (the image's
// ENTRYPOINT with the service's command, environment and mounted config
// file, its health check), then the example app, written for LocalStack,
// with its compose environment: its endpoint and queue URLs are
// LocalStack's, and only the host name the test cannot resolve is mapped
// to the server's loopback port.
func TestContainerReplacesLocalStack(t *testing.T) {
	fifoq, _ := builtBinaries(t)
	img := readDockerfile(t)
	compose := readCompose(t, composeLocalStackDir)
	svc, ok := compose.Services["localstack"]
	if !ok {
		t.Fatal("docker-compose.yml has no localstack service: the app's endpoint names it")
	}
	appSvc, ok := compose.Services["app"]
	if !ok {
		t.Fatal("docker-compose.yml has no app service")
	}
	// What makes the replacement work unchanged: the service listens on
	// LocalStack's port, and the app still points at LocalStack.
	const localStackEndpoint = "http://localstack:4566"
	if !slices.Contains(svc.Command, "0.0.0.0:4566") {
		t.Errorf("the localstack service's command %q does not listen on 0.0.0.0:4566", svc.Command)
	}
	if got := appSvc.Environment["AWS_ENDPOINT_URL"]; got != localStackEndpoint {
		t.Errorf("the app's AWS_ENDPOINT_URL is %q, want LocalStack's %s", got, localStackEndpoint)
	}
	if dep, ok := appSvc.DependsOn["localstack"]; !ok || dep.Condition != "service_healthy" {
		t.Errorf("the app does not wait for the localstack service to be healthy: %+v", appSvc.DependsOn)
	}

	m := mounts(t, composeLocalStackDir, compose, svc)
	port := freePort(t)
	// here maps a container's argument or variable to this machine:
	// mounted paths as rewrite maps them, and LocalStack's port to the
	// server's.
	here := func(s string) string {
		return strings.ReplaceAll(rewrite(s, m, port), ":4566", ":"+strconv.Itoa(port))
	}
	args := slices.Clone(img.cmd)
	if len(svc.Command) > 0 {
		args = slices.Clone(svc.Command) // compose's command replaces the image's CMD, not its ENTRYPOINT
	}
	for i := range args {
		args[i] = here(args[i])
	}
	_, exited := startContainer(t, fifoq, args, containerEnv(svc.Environment, m, port))

	// The compose file's health check, as Docker would run it.
	check := svc.Healthcheck.Test
	if len(check) < 3 || check[0] != "CMD" || check[1] != img.entrypoint[0] {
		t.Fatalf("health check %q: want [CMD %s healthcheck ...]", check, img.entrypoint[0])
	}
	hc := make([]string, 0, len(check)-2)
	for _, a := range check[2:] {
		hc = append(hc, here(a))
	}
	waitHealthy(t, fifoq, hc, exited)

	// The app, with its compose environment; the one change is the host
	// of its endpoint, which only compose's network resolves. The queue
	// URLs keep naming localstack:4566: fifoq reads only their path.
	app := filepath.Join(t.TempDir(), "app")
	if out, err := exec.Command("go", "build", "-o", app, composeLocalStackDir+"/app").CombinedOutput(); err != nil {
		t.Fatalf("build the example app: %v\n%s", err, out)
	}
	appCmd := exec.Command(app)
	appCmd.Env = containerEnv(appSvc.Environment, m, port)
	for i, kv := range appCmd.Env {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL=") {
			appCmd.Env[i] = "AWS_ENDPOINT_URL=http://127.0.0.1:" + strconv.Itoa(port)
		}
	}
	out, err := appCmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the app written for LocalStack failed against fifoq: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
