package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"narad/client"
)

func newUserCommand(a *app) *cobra.Command {
	return newGroupCommand("user", "Manage the users of a secured server (admin)",
		newUserAddCommand(a), newUserListCommand(a), newUserInfoCommand(a),
		newUserGrantCommand(a), newUserPasswdCommand(a), newUserRemoveCommand(a))
}

// grantFlagHelp explains --grant, shared by add and grant.
const grantFlagHelp = `grant as action:pattern[,pattern] (repeatable); actions produce, consume,
create and admin (bare, no patterns); a pattern is a topic name or a prefix ending in *`

// parseGrants turns --grant values into grants; the server checks the
// actions and patterns.
func parseGrants(values []string) ([]client.Grant, error) {
	grants := []client.Grant{}
	for _, value := range values {
		action, patterns, hasPatterns := strings.Cut(value, ":")
		if action == "" || (hasPatterns && patterns == "") {
			return nil, usagef("--grant %q: want action:pattern[,pattern] or admin", value)
		}
		grant := client.Grant{Action: action}
		if hasPatterns {
			grant.Patterns = strings.Split(patterns, ",")
		}
		grants = append(grants, grant)
	}
	return grants, nil
}

func newUserAddCommand(a *app) *cobra.Command {
	var password string
	var grantValues []string
	var fromStdin *bool
	cmd := &cobra.Command{
		Use:   "add <username> (--user-password P | --password-stdin) [--grant action:pattern]...",
		Short: "Create a user",
		Example: `  narad user add alice --user-password s3cret --grant produce:orders --grant consume:orders*
  narad user add ops --user-password s3cret --grant admin
  printf '%s\n' "$OPS_PASSWORD" | narad user add ops --password-stdin --grant admin`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			password, given, err := a.passwordFrom(cmd, "user-password", password, *fromStdin)
			if err != nil {
				return err
			}
			if !given {
				return usagef("user add needs --user-password or --password-stdin")
			}
			grants, err := parseGrants(grantValues)
			if err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			user, err := broker.CreateUser(cmd.Context(), client.CreateUserRequest{Username: args[0], Password: password, Grants: grants})
			if err != nil {
				return err
			}
			return printJSON(a.stdout, user)
		},
	}
	cmd.Flags().StringVar(&password, "user-password", "", "the new user's password (1 to 72 bytes)")
	fromStdin = addPasswordStdinFlag(cmd, "the new user's password")
	cmd.Flags().StringArrayVar(&grantValues, "grant", nil, grantFlagHelp)
	return cmd
}

func newUserListCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List the users (JSON)",
		Example: "  narad user ls",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			users, err := broker.ListUsers(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(a.stdout, append([]client.User{}, users...))
		},
	}
}

func newUserInfoCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "info <username>",
		Short:   "Show one user (JSON)",
		Example: "  narad user info alice",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			user, err := broker.GetUser(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(a.stdout, user)
		},
	}
}

func newUserGrantCommand(a *app) *cobra.Command {
	var grantValues []string
	cmd := &cobra.Command{
		Use:   "grant <username> [--grant action:pattern]...",
		Short: "Replace a user's grants (no --grant: none)",
		Example: `  narad user grant alice --grant produce:orders,invoices --grant consume:orders*
  narad user grant alice          # take every grant away`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			grants, err := parseGrants(grantValues)
			if err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			user, err := broker.SetGrants(cmd.Context(), args[0], grants)
			if err != nil {
				return err
			}
			return printJSON(a.stdout, user)
		},
	}
	cmd.Flags().StringArrayVar(&grantValues, "grant", nil, grantFlagHelp)
	return cmd
}

func newUserPasswdCommand(a *app) *cobra.Command {
	var current, next string
	var fromStdin *bool
	cmd := &cobra.Command{
		Use:   "passwd <username> (--new-password P | --password-stdin) [--current-password C]",
		Short: "Change a password (your own: the current one is the one you connect with; an admin another's)",
		Example: `  narad -u alice -p old user passwd alice --new-password new
  narad -u admin -p root user passwd alice --new-password reset
  printf '%s\n' "$NEW" | narad -u admin user passwd alice --password-stdin   # -p from NARAD_PASS`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			next, given, err := a.passwordFrom(cmd, "new-password", next, *fromStdin)
			if err != nil {
				return err
			}
			if !given {
				return usagef("user passwd needs --new-password or --password-stdin")
			}
			current, err := a.currentPassword(cmd, args[0], current)
			if err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			if err := broker.SetPassword(cmd.Context(), args[0], current, next); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "password of %s changed\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&current, "current-password", "", "the current password (to change your own; default: the password you connect with)")
	cmd.Flags().StringVar(&next, "new-password", "", "the new password (1 to 72 bytes)")
	fromStdin = addPasswordStdinFlag(cmd, "the new password")
	return cmd
}

// currentPassword is the current password a password change sends: the
// flag's when given; else, for the caller's own password, the password
// it connects with (-p, NARAD_PASS or its context), which the server
// checks as the current one anyway. Without that default the current
// password could only be given as a flag, which ps and the shell's
// history show, even when the new one came with --password-stdin.
func (a *app) currentPassword(cmd *cobra.Command, username, flagValue string) (string, error) {
	if cmd.Flags().Changed("current-password") {
		return flagValue, nil
	}
	target, err := a.resolveConnection(cmd)
	if err != nil || target.user != username {
		return "", err
	}
	return target.password, nil
}

func newUserRemoveCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "rm <username>",
		Short:   "Delete a user (not the root, not yourself)",
		Example: "  narad user rm alice",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			return broker.DeleteUser(cmd.Context(), args[0])
		},
	}
}
