package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// idFlags select the identity file and the caller's token.
type idFlags struct {
	file  string
	token string
}

func (f *idFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "identity", "", "identity file (default DATA_DIR/users.yaml)")
	cmd.Flags().StringVar(&f.token, "token", os.Getenv("GANTRY_TOKEN"), "your API token (env GANTRY_TOKEN)")
}

func (f *idFlags) path(dataDir string) string {
	if f.file != "" {
		return f.file
	}
	return filepath.Join(dataDir, "users.yaml")
}

// caller is who a decision is made as: through a server, the token's user as the server
// finds it (the server authenticates); else the token's user in the local identity file.
func (f *idFlags) caller(dataDir string, rf remoteFlags) (*identity.User, error) {
	if rf.server != "" {
		return &identity.User{}, nil
	}
	return f.whoami(dataDir)
}

// whoami authenticates the caller's token.
func (f *idFlags) whoami(dataDir string) (*identity.User, error) {
	dir, err := identity.Load(f.path(dataDir))
	if err != nil {
		return nil, err
	}
	u, err := dir.Authenticate(f.token)
	if err != nil {
		return nil, fmt.Errorf("%v: pass --token or set GANTRY_TOKEN (create one with gantry user add)", err)
	}
	return u, nil
}

func approvalsCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var limit int
	var token, output string
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List approvals, interventions and inputs that wait for a decision",
		Long: `Lists what running executions wait for, newest first: every waiting execution, or with
--limit a page of that many executions (and the --page-token of the next page).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				var page starter.PendingPage
				var err error
				if limit > 0 || token != "" {
					page, err = c.PendingPage(ctx, limit, token)
				} else {
					page.Pending, err = c.Pending(ctx)
				}
				if errors.Is(err, starter.ErrPageToken) {
					return usageErr("%v", err)
				}
				if err != nil {
					return err
				}
				if output == "json" {
					if page.Pending == nil {
						page.Pending = []starter.Pending{}
					}
					return printJSON(cmd.OutOrStdout(), page)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "EXECUTION\tNODE\tWAITING\tDETAIL")
				for _, p := range page.Pending {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ExecutionID, p.Path, p.Status, pendingDetail(p))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if page.NextPageToken != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "more: gantry approvals --limit %d --page-token %s\n", max(limit, 100), page.NextPageToken)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "list a page of this many waiting executions (0: all of them)")
	cmd.Flags().StringVar(&token, "page-token", "", "the page a previous --limit listing named")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func pendingDetail(p starter.Pending) string {
	if len(p.Inputs) > 0 {
		return "inputs " + strings.Join(p.Inputs, ", ")
	}
	if p.Approval != nil {
		return fmt.Sprintf("%q groups %s, %d of %d approvals", p.Approval.Message, strings.Join(p.Approval.UserGroups, ","), p.Approval.Approvals, p.Approval.MinimumCount)
	}
	if t := p.Ticket; t != nil {
		what := t.System + " " + t.Ticket
		if t.System == "Custom" {
			what = "custom approval script"
		}
		if t.Error != "" {
			return fmt.Sprintf("%s (read failing: %s)", what, t.Error)
		}
		return fmt.Sprintf("%s, not met: %s", what, strings.Join(t.Unmet, "; "))
	}
	return "actions " + strings.Join(p.Actions, "|")
}

func voteCmd(action string) *cobra.Command {
	var conn connFlags
	var id idFlags
	var rf remoteFlags
	var step, comment string
	var inputs []string
	cmd := &cobra.Command{
		Use:   strings.ToLower(action) + " EXECUTION [--step PATH] [--comment C] [--input NAME=VALUE ...]",
		Short: map[string]string{"APPROVE": "Approve", "REJECT": "Reject"}[action] + " a waiting HarnessApproval step as the user of your token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := id.caller(conn.dataDir, rf)
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			vals, err := pairs("--input", "NAME=VALUE", inputs)
			if err != nil {
				return err
			}
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				path, err := waitingStep(ctx, c, args[0], step, status.ApprovalWaiting)
				if err != nil {
					return err
				}
				msg, err := c.Approve(ctx, args[0], workflows.ApprovalRequest{Path: path, Action: action, User: u.Name,
					Email: u.Email, Groups: u.Groups, Comments: comment, Inputs: vals})
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&step, "step", "", "approval step path (default: the execution's only waiting approval)")
	cmd.Flags().StringVar(&comment, "comment", "", "comment recorded with the vote")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "approver input NAME=VALUE (repeatable)")
	conn.add(cmd)
	id.add(cmd)
	rf.add(cmd, &id.token)
	return cmd
}

// pairs reads a repeatable flag of NAME=VALUE pairs (form names them in the usage error).
func pairs(flag, form string, list []string) (map[string]string, error) {
	out := map[string]string{}
	return out, eachPair(flag, form, list, func(k, v string) { out[k] = v })
}

// eachPair calls fn with each NAME=VALUE pair of a repeatable flag, in order.
func eachPair(flag, form string, list []string, fn func(k, v string)) error {
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usageErr("%s %q: want %s", flag, kv, form)
		}
		fn(k, v)
	}
	return nil
}

// waitingStep is the step a decision is for: the one named with --step, or else the
// execution's only step in the waiting status.
func waitingStep(ctx context.Context, c control, id, step string, st status.Status) (string, error) {
	if step != "" {
		return step, nil
	}
	return onlyWaiting(ctx, c, id, st)
}

// onlyWaiting finds the single step of an execution in a waiting status.
func onlyWaiting(ctx context.Context, c control, id string, st status.Status) (string, error) {
	tree, err := c.Tree(ctx, id)
	if err != nil {
		return "", err
	}
	var found []string
	tree.Walk(func(n *workflows.Node) {
		if n.Status == st && n.Kind == "step" {
			found = append(found, n.Path)
		}
	})
	switch len(found) {
	case 0:
		return "", fmt.Errorf("execution %s has no step in %s", id, st)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("execution %s has several steps in %s (%s); choose one with --step", id, st, strings.Join(found, ", "))
}

func inputCmd() *cobra.Command {
	var conn connFlags
	var id idFlags
	var rf remoteFlags
	var step string
	var sets []string
	cmd := &cobra.Command{
		Use:   "input EXECUTION [--step PATH] --set KEY=VALUE ...",
		Short: "Supply the execution-time inputs a waiting step asks for (keys as gantry approvals lists them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := id.caller(conn.dataDir, rf)
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			vals, err := pairs("--set", "KEY=VALUE", sets)
			if err != nil {
				return err
			}
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				path, err := waitingStep(ctx, c, args[0], step, status.InputWaiting)
				if err != nil {
					return err
				}
				msg, err := c.SupplyInputs(ctx, args[0], workflows.InputRequest{Path: path, User: u.Name, Values: vals})
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&step, "step", "", "step path (default: the execution's only step waiting for inputs)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "input KEY=VALUE, e.g. spec.environmentVariables.WHO=me (repeatable)")
	conn.add(cmd)
	id.add(cmd)
	rf.add(cmd, &id.token)
	return cmd
}
