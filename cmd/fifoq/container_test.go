package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.yaml.in/yaml/v3"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/testenv"
)

// The container image and the compose example cannot be run where Docker
// is not (CI's machine has none). The tests below run the binary the way
// the image does instead: the Dockerfile's ENTRYPOINT and CMD, with the
// environment, mounted files, volume and health check of
// examples/compose/docker-compose.yml, each container path mapped to a
// file of the repository or a temporary directory.

const (
	dockerfilePath = "../../Dockerfile"
	composeDir     = "../../examples/compose"
)

// image is what the tests read from the Dockerfile's final stage.
type image struct {
	entrypoint, cmd, healthcheck []string
	user                         string
	volumes                      []string
}

// readDockerfile parses the instructions of the Dockerfile's last stage
// that say how the container runs.
func readDockerfile(t *testing.T) image {
	t.Helper()
	data, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, drop comments.
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	var img image
	jsonArray := func(s string) []string {
		var out []string
		if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &out); err != nil {
			t.Fatalf("Dockerfile: %q is not an exec-form JSON array: %v", s, err)
		}
		return out
	}
	for _, line := range lines {
		word, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			img = image{} // only the last stage counts
		case "ENTRYPOINT":
			img.entrypoint = jsonArray(rest)
		case "CMD":
			img.cmd = jsonArray(rest)
		case "USER":
			img.user = strings.TrimSpace(rest)
		case "VOLUME":
			img.volumes = jsonArray(rest)
		case "HEALTHCHECK":
			_, check, ok := strings.Cut(rest, " CMD ")
			if !ok {
				t.Fatalf("Dockerfile: HEALTHCHECK without an exec-form CMD: %q", line)
			}
			img.healthcheck = jsonArray(check)
		}
	}
	return img
}

// composeService is the part of a compose service the tests use.
type composeService struct {
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Secrets     []string          `yaml:"secrets"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

func readCompose(t *testing.T, dir string) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// mounts maps the container paths of a compose service of the compose
// file in dir (bind mounts, named volumes, secrets) to paths on this
// machine: bind mounts to the repository's files, named volumes to fresh
// temporary directories.
func mounts(t *testing.T, dir string, f composeFile, svc composeService) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, v := range svc.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Fatalf("volume %q: want SOURCE:TARGET", v)
		}
		src, dst := parts[0], parts[1]
		if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
			m[dst] = filepath.Join(dir, src)
		} else {
			if _, ok := f.Volumes[src]; !ok {
				t.Fatalf("volume %q is not declared under volumes:", src)
			}
			m[dst] = t.TempDir()
		}
	}
	for _, s := range svc.Secrets {
		sec, ok := f.Secrets[s]
		if !ok || sec.File == "" {
			t.Fatalf("secret %q is not declared with a file", s)
		}
		m["/run/secrets/"+s] = filepath.Join(dir, sec.File)
	}
	return m
}

// rewrite replaces, in s, a container path of m (or one under it) by its
// path here, and the container's port 9324 by port.
func rewrite(s string, m map[string]string, port int) string {
	for dst, src := range m {
		if s == dst {
			return src
		}
		if rest, ok := strings.CutPrefix(s, dst+"/"); ok {
			return filepath.Join(src, rest)
		}
	}
	return strings.ReplaceAll(s, ":9324", ":"+strconv.Itoa(port))
}

// freePort is a loopback port no other test of this process was given.
func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(testenv.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// containerEnv is a clean environment with env added, so that FIFOQ_ and
// AWS_ variables of the machine running the tests cannot change them.
func containerEnv(env map[string]string, m map[string]string, port int) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	for k, v := range env {
		out = append(out, k+"="+rewrite(v, m, port))
	}
	return out
}

func TestContainerImageDefinition(t *testing.T) {
	img := readDockerfile(t)
	if img.user == "" || img.user == "root" || strings.HasPrefix(img.user, "0:") || img.user == "0" {
		t.Errorf("the image runs as %q, want a non-root user", img.user)
	}
	if len(img.entrypoint) != 1 || filepath.Base(img.entrypoint[0]) != "fifoq" {
		t.Errorf("ENTRYPOINT %q, want the fifoq binary alone", img.entrypoint)
	}
	dataDir := ""
	for i, a := range img.cmd {
		if a == "--data-dir" && i+1 < len(img.cmd) {
			dataDir = img.cmd[i+1]
		}
	}
	if dataDir == "" || len(img.volumes) == 0 || img.volumes[0] != dataDir {
		t.Errorf("CMD %q keeps data in %q, VOLUME is %q: the data dir must be the volume", img.cmd, dataDir, img.volumes)
	}
	if len(img.healthcheck) < 2 || img.healthcheck[0] != img.entrypoint[0] || img.healthcheck[1] != "healthcheck" ||
		!strings.HasSuffix(img.healthcheck[len(img.healthcheck)-1], "/readyz") {
		t.Errorf("HEALTHCHECK %q, want fifoq healthcheck against /readyz", img.healthcheck)
	}
}

// TestContainerEntrypointWithComposeSettings runs fifoq as the image's
// ENTRYPOINT and CMD do, configured as examples/compose configures it
// (config file and credentials file mounted, data volume), checks it
// with the image's and compose's health checks, then runs the example app
// against it with the app's compose environment.
func TestContainerEntrypointWithComposeSettings(t *testing.T) {
	if !dockerAvailable() {
		t.Log("Docker is not available: testing the image's entrypoint and the compose settings with the binary instead")
	}
	fifoq, app := builtBinaries(t)
	img := readDockerfile(t)
	compose := readCompose(t, composeDir)
	svc, ok := compose.Services["fifoq"]
	if !ok {
		t.Fatal("docker-compose.yml has no fifoq service")
	}
	m := mounts(t, composeDir, compose, svc)
	port := freePort(t)
	for _, dir := range img.volumes {
		if _, ok := m[dir]; !ok {
			t.Fatalf("compose does not mount the image's volume %s", dir)
		}
	}

	args := make([]string, 0, len(img.cmd))
	for _, a := range img.cmd {
		args = append(args, rewrite(a, m, port))
	}
	server, exited := startContainer(t, fifoq, args, containerEnv(svc.Environment, m, port))

	// The health checks, as Docker would run them: the image's, then the
	// compose file's.
	for _, check := range [][]string{img.healthcheck, svc.Healthcheck.Test[1:]} {
		waitHealthy(t, fifoq, rewriteAll(check[1:], m, port), exited)
	}

	// The config file's queues exist, and requests need the credentials
	// file's key.
	appSvc := compose.Services["app"]
	ctx := context.Background()
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	client := func(key, secret string) *sqs.Client {
		return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider(key, secret, "")})
	}
	good := client(appSvc.Environment["AWS_ACCESS_KEY_ID"], appSvc.Environment["AWS_SECRET_ACCESS_KEY"])
	for _, q := range []string{"orders.fifo", "orders-dlq.fifo"} {
		if _, err := good.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q)}); err != nil {
			t.Errorf("queue %s of the mounted config file: %v", q, err)
		}
	}
	_, err := client("AKIAOTHER", "other").ListQueues(ctx, &sqs.ListQueuesInput{})
	if err == nil || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		t.Errorf("a request signed with a key not in the credentials file: %v, want InvalidClientTokenId", err)
	}

	// The app, with its compose environment, sends and receives its orders.
	appCmd := exec.Command(app)
	appCmd.Env = containerEnv(appSvc.Environment, m, port)
	for i, kv := range appCmd.Env {
		if strings.HasPrefix(kv, "FIFOQ_ENDPOINT=") {
			appCmd.Env[i] = "FIFOQ_ENDPOINT=" + endpoint
		}
	}
	if out, err := appCmd.CombinedOutput(); err != nil {
		t.Fatalf("the example app failed: %v\n%s", err, out)
	} else {
		t.Logf("%s", bytes.TrimSpace(out))
	}

	// An operator backs the stack up with the key of its credentials file.
	backupComposeStack(t, fifoq, endpoint, m["/run/secrets/fifoq_credentials"])

	// A SIGTERM (docker stop) stops the server cleanly, with its data in
	// the volume.
	server.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Errorf("the server's exit after SIGTERM: %v", err)
	}
	exited <- nil
	entries, _ := os.ReadDir(m[img.volumes[0]])
	if len(entries) == 0 {
		t.Errorf("nothing was written to the volume %s", img.volumes[0])
	}
}

// TestContainerEntrypointNeedsCredentials checks the image's command line
// refuses to start without credentials, since it listens beyond loopback,
// and starts with credentials from the environment instead of a file.
func TestContainerEntrypointNeedsCredentials(t *testing.T) {
	fifoq, _ := builtBinaries(t)
	img := readDockerfile(t)
	port := freePort(t)
	m := map[string]string{img.volumes[0]: t.TempDir()}
	args := rewriteAll(img.cmd, m, port)

	var out bytes.Buffer
	cmd := exec.Command(fifoq, args...)
	cmd.Env = containerEnv(nil, m, port)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out.String(), "without credentials") {
		t.Fatalf("the image's command without credentials: %v\n%s", err, out.String())
	}

	cmd = exec.Command(fifoq, args...)
	cmd.Env = containerEnv(map[string]string{"FIFOQ_ACCESS_KEY_ID": "AKIAENV", "FIFOQ_SECRET_ACCESS_KEY": "env-secret"}, m, port)
	out.Reset()
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	check := rewriteAll(img.healthcheck[1:], m, port)
	for tries := 0; ; tries++ {
		if err := exec.Command(fifoq, check...).Run(); err == nil {
			break
		}
		if tries == 300 {
			t.Fatalf("with credentials from the environment the server never became ready:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dockerAvailable reports whether a Docker daemon answers, as .ci/run
// checks before it builds the image.
func dockerAvailable() bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

func rewriteAll(args []string, m map[string]string, port int) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = rewrite(a, m, port)
	}
	return out
}

// waitHealthy runs the health check fifoq args, as Docker would, until it
// passes, for up to 30 s; it fails the test if the server exits first (its
// Wait's result comes on exited, and is put back for the test's cleanup).
func waitHealthy(t *testing.T, fifoq string, args []string, exited chan error) {
	t.Helper()
	for tries := 0; ; tries++ {
		out, err := exec.Command(fifoq, args...).CombinedOutput()
		if err == nil {
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the server exited (%v) before it was healthy", err)
		default:
		}
		if tries == 300 {
			t.Fatalf("health check %q still failing: %v: %s", args, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startContainer starts fifoq args with env as a container's process and
// returns it and the channel its Wait's result comes on (a test that
// reads the result puts one back). When the test ends the process gets
// SIGTERM, as docker stop sends, and must exit cleanly; its output is
// logged if the test failed.
func startContainer(t *testing.T, fifoq string, args, env []string) (*exec.Cmd, chan error) {
	t.Helper()
	logs := &bytes.Buffer{}
	server := exec.Command(fifoq, args...)
	server.Env = env
	server.Stdout, server.Stderr = logs, logs
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	t.Cleanup(func() {
		server.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("the server's exit after SIGTERM: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return server, exited
}

// backupComposeStack runs fifoq backup against the compose stack at
// endpoint, as its operator would: signed with the admin key of the
// stack's credentials file (credFile here), which it must hold.
func backupComposeStack(t *testing.T, fifoq, endpoint, credFile string) {
	t.Helper()
	creds, err := auth.LoadCredentialsFile(credFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(creds) == 0 {
		t.Fatalf("%s holds no key", credFile)
	}
	// The operator's key is the file's admin key; without one, the first
	// key, which the server must then refuse.
	admin := &creds[0]
	for i := range creds {
		if creds[i].Admin {
			admin = &creds[i]
		}
	}
	// Seconds after the cluster formed, its shards may have applied
	// nothing yet: the server waits for them rather than failing
	// (TestBackupWhileShardsForm), so one attempt must do.
	cmd := exec.Command(fifoq, "backup", "--endpoint", endpoint, filepath.Join(t.TempDir(), "compose.backup"))
	cmd.Env = containerEnv(map[string]string{"FIFOQ_ACCESS_KEY_ID": admin.AccessKeyID, "FIFOQ_SECRET_ACCESS_KEY": admin.SecretAccessKey}, nil, 0)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fifoq backup of the compose stack with its admin key: %v: %s", err, strings.ReplaceAll(string(bytes.TrimSpace(out)), "\n", " | "))
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
