package main

import (
	"bufio"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// passwordStdinFlag reads a password from standard input instead of a
// flag, which ps and the shell's history would show.
const passwordStdinFlag = "password-stdin"

// passwordLineBytesMax bounds the line read: passwords are at most 72
// bytes (bcrypt), and a longer line is refused by the server anyway.
const passwordLineBytesMax = 1 << 10

// addPasswordStdinFlag registers --password-stdin on cmd; what names the
// password it stands for.
func addPasswordStdinFlag(cmd *cobra.Command, what string) *bool {
	return cmd.Flags().Bool(passwordStdinFlag, false, "read "+what+" from the first line of standard input (kept out of ps and the shell's history)")
}

// passwordFrom returns the password of flag (given as a flag) or, with
// --password-stdin, the first line of standard input; given reports
// whether either was. Both at once is a usage error.
func (a *app) passwordFrom(cmd *cobra.Command, flag, value string, fromStdin bool) (password string, given bool, err error) {
	if !fromStdin {
		return value, cmd.Flags().Changed(flag), nil
	}
	if cmd.Flags().Changed(flag) {
		return "", false, usagef("give --%s or --%s, not both", flag, passwordStdinFlag)
	}
	line, err := bufio.NewReaderSize(io.LimitReader(a.stdin, passwordLineBytesMax+1), passwordLineBytesMax+1).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", false, err
	}
	if len(line) > passwordLineBytesMax {
		return "", false, usagef("--%s: the first line of standard input is longer than %d bytes", passwordStdinFlag, passwordLineBytesMax)
	}
	password = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if password == "" {
		return "", false, usagef("--%s: standard input holds no password", passwordStdinFlag)
	}
	return password, true, nil
}
