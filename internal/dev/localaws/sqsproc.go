package localaws

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// ErrNoSQSEmulator means the pinned npm emulator is not installed.
var ErrNoSQSEmulator = errors.New("localaws: local-aws-sqs is not installed: run `make deps` (npm ci in localstack/)")

type sqsProcess struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// startSQS runs localstack/sqs-server.js beside the template's repository
// and waits until it prints the port it listens on.
func startSQS(ctx context.Context, templatePath string, port int, log *slog.Logger) (*sqsProcess, error) {
	dir := filepath.Join(filepath.Dir(filepath.Dir(templatePath)), "localstack")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "local-aws-sqs")); err != nil {
		return nil, ErrNoSQSEmulator
	}
	cmd := exec.Command("node", filepath.Join(dir, "sqs-server.js"))
	cmd.Env = append(os.Environ(), "SQS_PORT="+strconv.Itoa(port))
	cmd.Stderr = os.Stderr
	setDeathSignal(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("localaws: sqs stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("localaws: sqs stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localaws: start node: %w", err)
	}
	p := &sqsProcess{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	gotPort, err := readPort(ctx, stdout, p.done)
	if err != nil {
		p.Close()
		return nil, err
	}
	go io.Copy(io.Discard, stdout)
	p.URL = fmt.Sprintf("http://127.0.0.1:%d", gotPort)
	log.Debug("sqs emulator started", "url", p.URL, "pid", cmd.Process.Pid)
	return p, nil
}

func readPort(ctx context.Context, r io.Reader, done <-chan struct{}) (int, error) {
	type result struct {
		port int
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadBytes('\n')
		if err != nil {
			ch <- result{err: fmt.Errorf("localaws: sqs emulator exited before listening: %w", err)}
			return
		}
		var msg struct{ Port int }
		if err := json.Unmarshal(line, &msg); err != nil || msg.Port == 0 {
			ch <- result{err: fmt.Errorf("localaws: sqs emulator said %q", line)}
			return
		}
		ch <- result{port: msg.Port}
	}()
	select {
	case res := <-ch:
		return res.port, res.err
	case <-done:
		return 0, errors.New("localaws: sqs emulator exited during start")
	case <-time.After(20 * time.Second):
		return 0, errors.New("localaws: sqs emulator did not start within 20s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Close ends the emulator: closing stdin makes it exit, and a kill follows
// if it has not within a second.
func (p *sqsProcess) Close() error {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}
