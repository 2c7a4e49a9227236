// Command imagecheck runs fifoq's container image, unpacked, as a
// container runtime would run it, and checks that it serves real SQS
// clients. CI runs it on the release's linux/amd64 image after umoci has
// unpacked it into an OCI runtime bundle:
//
//	umoci unpack --image DIR/oci:VERSION BUNDLE
//	unshare --net -- sh -c 'ip link set lo up && exec imagecheck --bundle BUNDLE --version VERSION'
//
// From the bundle's config.json, which umoci derives from the image's
// config, it takes the process's arguments (the image's ENTRYPOINT and
// CMD), environment, user and working directory, and runs them inside the
// unpacked root filesystem (chroot) as that user with no supplementary
// groups, adding an access key to the environment as `docker run -e
// FIFOQ_ACCESS_KEY_ID=... -e FIFOQ_SECRET_ACCESS_KEY=...` would: the
// image's command listens on 0.0.0.0:9324, which fifoq refuses to do
// without credentials. It then checks that
//
//   - the binary reports the release's version;
//   - the server runs as the image's user (from /proc/PID/status: uids,
//     gids, no groups, no capabilities), which the image's /etc/passwd
//     names;
//   - CreateQueue, SendMessage, ReceiveMessage and DeleteMessage signed
//     with that key succeed through aws-sdk-go-v2, and a request signed
//     with another key is refused;
//   - the server keeps its data in the image's volume (/data), as files
//     of that user;
//   - SIGTERM stops it with exit status 0.
//
// It must run as root (chroot and the change of user need it), in a
// network namespace of its own so that port 9324 is free whatever else
// runs on the machine: that is what the unshare above is for. It is not
// a container: there are no other namespaces, no cgroup and no /proc in
// the root filesystem; what it checks is the image's contents and
// configuration.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// runtimeConfig is the part of an OCI runtime bundle's config.json that
// says how to start the container's process.
type runtimeConfig struct {
	Process struct {
		Args []string `json:"args"`
		Env  []string `json:"env"`
		Cwd  string   `json:"cwd"`
		User struct {
			UID            uint32   `json:"uid"`
			GID            uint32   `json:"gid"`
			AdditionalGids []uint32 `json:"additionalGids"`
		} `json:"user"`
	} `json:"process"`
	Root struct {
		Path string `json:"path"`
	} `json:"root"`
}

// The access key given to the container, as a user would give theirs.
const (
	accessKey = "AKIAFIFOQRELEASECHK1"
	secretKey = "release-check-secret-0123456789abcdef"
)

func main() {
	bundle := flag.String("bundle", "", "OCI runtime bundle (umoci unpack's output): config.json and the root filesystem")
	version := flag.String("version", "", "the version the binary must report")
	flag.Parse()
	if *bundle == "" || *version == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "Usage: imagecheck --bundle DIR --version VERSION")
		os.Exit(2)
	}
	if err := check(*bundle, *version); err != nil {
		fmt.Fprintln(os.Stderr, "imagecheck: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("imagecheck: ok")
}

// container is the process as the bundle describes it.
type container struct {
	cfg    runtimeConfig
	rootfs string
}

// command returns args run as the container's process: chroot into the
// root filesystem, the container's user with no other groups, its
// working directory and environment plus extra.
func (c *container) command(args []string, extra ...string) *exec.Cmd {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(append([]string{}, c.cfg.Process.Env...), extra...)
	cmd.Dir = c.cfg.Process.Cwd
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot: c.rootfs,
		Credential: &syscall.Credential{
			Uid: c.cfg.Process.User.UID, Gid: c.cfg.Process.User.GID,
			Groups: c.cfg.Process.User.AdditionalGids, // none: setgroups drops root's
		},
		Setpgid: true,
	}
	return cmd
}

func check(bundle, version string) error {
	if os.Geteuid() != 0 {
		return errors.New("must run as root, to chroot and change user as a runtime does")
	}
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return err
	}
	c := &container{}
	if err := json.Unmarshal(data, &c.cfg); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	c.rootfs = c.cfg.Root.Path
	if !filepath.IsAbs(c.rootfs) {
		c.rootfs = filepath.Join(bundle, c.rootfs)
	}
	p := c.cfg.Process
	fmt.Printf("imagecheck: args %q, user %d:%d, env %q\n", p.Args, p.User.UID, p.User.GID, p.Env)
	if len(p.Args) == 0 {
		return errors.New("config.json: no process args")
	}
	if p.User.UID == 0 {
		return errors.New("the image runs as root")
	}
	if err := checkFiles(c); err != nil {
		return err
	}
	out, err := c.command([]string{p.Args[0], "version"}).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s version: %v\n%s", p.Args[0], err, out)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != "fifoq "+version {
		return fmt.Errorf("%s version printed %q, want \"fifoq %s\"", p.Args[0], first, version)
	}
	fmt.Printf("imagecheck: %s version: %s\n", p.Args[0], strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
	return serve(c)
}

// checkFiles checks what the image holds besides the binary: a passwd
// entry for the user (so tools show a name), and CA certificates.
func checkFiles(c *container) error {
	passwd, err := os.ReadFile(filepath.Join(c.rootfs, "etc", "passwd"))
	if err != nil {
		return err
	}
	name := ""
	for _, line := range strings.Split(string(passwd), "\n") {
		if f := strings.Split(line, ":"); len(f) >= 3 && f[2] == fmt.Sprint(c.cfg.Process.User.UID) {
			name = f[0]
		}
	}
	if name == "" {
		return fmt.Errorf("/etc/passwd names no user %d", c.cfg.Process.User.UID)
	}
	certs, err := os.ReadFile(filepath.Join(c.rootfs, "etc", "ssl", "certs", "ca-certificates.crt"))
	if err != nil {
		return err
	}
	n := bytes.Count(certs, []byte("-----BEGIN CERTIFICATE-----"))
	if n < 50 {
		return fmt.Errorf("/etc/ssl/certs/ca-certificates.crt holds %d certificates", n)
	}
	fmt.Printf("imagecheck: user %d is %q in /etc/passwd; %d CA certificates\n", c.cfg.Process.User.UID, name, n)
	return nil
}

// serve starts the image's command and talks to it.
func serve(c *container) (err error) {
	p := c.cfg.Process
	addr := flagValue(p.Args, "--listen")
	dataDir := flagValue(p.Args, "--data-dir")
	_, port, err := net.SplitHostPort(addr)
	if err != nil || dataDir == "" {
		return fmt.Errorf("the image's command %q has no --listen HOST:PORT or --data-dir", p.Args)
	}
	endpoint := "http://127.0.0.1:" + port
	var logs bytes.Buffer
	cmd := c.command(p.Args, "FIFOQ_ACCESS_KEY_ID="+accessKey, "FIFOQ_SECRET_ACCESS_KEY="+secretKey)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if err != nil {
			err = fmt.Errorf("%w\nthe server's output:\n%s", err, logs.Bytes())
		}
	}()
	if err := waitReady(endpoint+"/readyz", exited); err != nil {
		return err
	}
	if err := checkProcess(cmd.Process.Pid, p.User.UID, p.User.GID); err != nil {
		return err
	}
	if err := useSQS(endpoint); err != nil {
		return err
	}
	if err := checkData(filepath.Join(c.rootfs, dataDir), p.User.UID); err != nil {
		return err
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case werr := <-exited:
		if werr != nil {
			return fmt.Errorf("after SIGTERM the server exited with %v", werr)
		}
	case <-time.After(20 * time.Second):
		return errors.New("the server did not stop within 20s of SIGTERM")
	}
	fmt.Printf("imagecheck: SIGTERM stopped the server with status 0\n")
	return nil
}

// flagValue is the value after name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// waitReady waits for the readiness probe to answer 200.
func waitReady(url string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the server exited before it was ready: %v", err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 30s", url)
}

// checkProcess checks, from /proc/PID/status, that the server runs as
// uid:gid with no supplementary groups and no capabilities.
func checkProcess(pid int, uid, gid uint32) error {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	want := map[string]string{
		"Uid":    strings.Repeat(fmt.Sprintf("%d\t", uid), 3) + fmt.Sprint(uid),
		"Gid":    strings.Repeat(fmt.Sprintf("%d\t", gid), 3) + fmt.Sprint(gid),
		"Groups": "",
		"CapEff": "0000000000000000",
		"CapPrm": "0000000000000000",
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if w, ok := want[k]; ok {
			if strings.TrimSpace(v) != w {
				return fmt.Errorf("/proc/%d/status: %s is %q, want %q", pid, k, strings.TrimSpace(v), w)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("/proc/%d/status lacks %v", pid, want)
	}
	fmt.Printf("imagecheck: the server (pid %d) runs as uid %d, gid %d, no groups, no capabilities\n", pid, uid, gid)
	return nil
}

// useSQS drives the server with the AWS SDK for Go v2, signed with the
// container's key, and checks that another key is refused.
func useSQS(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(key, secret string) *sqs.Client {
		return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider(key, secret, "")})
	}
	c := client(accessKey, secretKey)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("release-check.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		return fmt.Errorf("CreateQueue: %w", err)
	}
	body := "from the release's image"
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body), MessageGroupId: aws.String("g1")})
	if err != nil {
		return fmt.Errorf("SendMessage: %w", err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 2,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		return fmt.Errorf("ReceiveMessage: %w", err)
	}
	if len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != body || aws.ToString(got.Messages[0].MessageId) != aws.ToString(sent.MessageId) {
		return fmt.Errorf("ReceiveMessage returned %d messages, want the one sent (%s)", len(got.Messages), aws.ToString(sent.MessageId))
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		return fmt.Errorf("DeleteMessage: %w", err)
	}
	_, err = client("AKIAFIFOQSOMEONEELSE", "wrong").ListQueues(ctx, &sqs.ListQueuesInput{})
	if err == nil || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		return fmt.Errorf("ListQueues signed with an unknown key: %v, want InvalidClientTokenId", err)
	}
	fmt.Printf("imagecheck: CreateQueue, SendMessage, ReceiveMessage, DeleteMessage answered (message %s); an unknown key was refused\n", aws.ToString(sent.MessageId))
	return nil
}

// checkData checks that the server wrote its state into the volume, as
// files of the container's user.
func checkData(dir string, uid uint32) error {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid != uid {
			return fmt.Errorf("%s belongs to uid %d, not %d", p, st.Uid, uid)
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("nothing was written to the volume %s", dir)
	}
	fmt.Printf("imagecheck: %d files and directories in the volume, all of uid %d\n", n, uid)
	return nil
}
