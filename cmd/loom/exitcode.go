package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

// The exit statuses every command shares. A command whose status answers a
// question (loom diff: does anything differ?) uses 1 for "yes" and fails
// with exitTrouble instead, as kubectl diff and GNU diff do; it says so
// with failsWith.
const (
	exitOK      = 0 // the command did what it was asked
	exitFailure = 1 // it failed, or was used wrongly (a usage error)
	exitTrouble = 2 // the failure status of a command whose 1 is an answer
)

// exitStatusPlain is the exit-status paragraph of the help of a command
// whose status only says whether it succeeded.
const exitStatusPlain = `Exit status: 0 when it succeeded; 1 when it failed, or was used wrongly
(an unknown flag, a missing or extra argument).`

// annotationFailureCode is the cobra annotation that holds a command's
// failure status when it is not exitFailure.
const annotationFailureCode = "loom.dev/failure-exit-code"

// exitError ends the process with a given code: a command's answer (loom
// diff's 1, loom rollout status's 2 and 3) or its failure.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// failsWith makes code the status cmd exits with when it fails, usage
// errors (an unknown flag, a missing argument, a bad -o value) included.
func failsWith(cmd *cobra.Command, code int) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationFailureCode] = strconv.Itoa(code)
	return cmd
}

// exitCode is the status the process ends with after cmd, the command
// cobra ran (or tried to), returned err: the code an exitError carries,
// else the command's failure status.
func exitCode(cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if cmd != nil {
		if c, err := strconv.Atoi(cmd.Annotations[annotationFailureCode]); err == nil {
			return c
		}
	}
	return exitFailure
}

// usageHint adds to a flag error where to read the command's usage, since
// the root command silences the usage itself.
func usageHint(cmd *cobra.Command, err error) error {
	return fmt.Errorf("%w\nRun '%s --help' for usage", err, cmd.CommandPath())
}
