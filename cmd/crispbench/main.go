// Command crispbench generates and replays job logs for crisp's
// Controller case study ("The Future of a Missed Deadline", §2.1, §4).
//
//	crispbench gen --seed 7 --jobs 1000000 -o big.csv
//
// Each subcommand lives in a file of its own (gen.go, ...) that
// registers it from an init function; the work itself is done in
// internal packages. Adding a subcommand touches no other file.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crispbench:", err)
		var ue *usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// env is what a subcommand's Run gets besides its flags.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
}

// runner is a subcommand: a struct whose tagged fields are its flags and
// arguments (see github.com/alecthomas/kong) and whose Run does the work.
type runner interface {
	Run(e *env) error
}

// subcommand is what a subcommand's file registers.
type subcommand struct {
	name string
	help string        // one line, for the list of subcommands
	vars kong.Vars     // values for ${...} in its struct tags; shared by all subcommands, so prefix keys with the name
	new  func() runner // a fresh, zero-flagged instance for each run
}

var subcommands []subcommand

// register adds a subcommand; call it from an init function.
func register(c subcommand) { subcommands = append(subcommands, c) }

const description = `Generate and replay job logs for crisp's Controller case study.

Example:

    crispbench gen --seed 7 -o jobs.csv
`

// run parses args (without the program name), runs the chosen
// subcommand and returns its error. A mistake in the arguments is a
// *usageError. Help (also shown for no arguments at all) goes to stdout
// and returns nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var root struct{}
	cmds := slices.Clone(subcommands)
	slices.SortFunc(cmds, func(a, b subcommand) int { return strings.Compare(a.name, b.name) })
	opts := []kong.Option{
		kong.Name("crispbench"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.Bind(&env{ctx: ctx, stdout: stdout, stderr: stderr}),
	}
	seen := map[string]string{}
	for _, c := range cmds {
		for k := range c.vars {
			if other, dup := seen[k]; dup {
				return fmt.Errorf("subcommands %s and %s both define ${%s}", other, c.name, k) // a bug
			}
			seen[k] = c.name
		}
		opts = append(opts, kong.DynamicCommand(c.name, c.help, "", c.new()), c.vars)
	}
	parser, err := kong.New(&root, opts...)
	if err != nil {
		return fmt.Errorf("building the command line: %w", err) // a bug in a subcommand's tags
	}
	kctx, err := parse(parser, args)
	if err != nil || kctx == nil {
		return err
	}
	return kctx.Run()
}

// exitRequest is how kong's help flag, which wants to end the process,
// comes back to run instead. Kong calls its Exit function after printing
// help and, if that returns, goes on parsing (and may run the command),
// so the function must not return: it panics with an exitRequest, which
// parse recovers.
type exitRequest int

// parse runs the parser, turning kong's exit after printing help into a
// nil Context and its parse errors into usage errors.
func parse(p *kong.Kong, args []string) (kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			kctx, err = nil, nil
			if code != 0 {
				err = fmt.Errorf("exit status %d", code)
			}
		}
	}()
	if len(args) == 0 {
		args = []string{"--help"}
	}
	kctx, err = p.Parse(args)
	var pe *kong.ParseError
	if errors.As(err, &pe) {
		cmd := "crispbench"
		if pe.Context != nil && pe.Context.Command() != "" {
			cmd += " " + strings.Fields(pe.Context.Command())[0]
		}
		return nil, &usageError{err: pe.Unwrap(), help: cmd + " --help"}
	}
	return kctx, err
}

// usageError is a mistake in the command line.
type usageError struct {
	err  error
	help string // the command that shows the relevant help
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v (see '%s')", e.err, e.help)
}

func (e *usageError) Unwrap() error { return e.err }
