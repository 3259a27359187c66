package cli

import (
	"context"
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/workflows"
)

// gitCmd manages a server's remote entities and starts remote pipelines (docs/git.md). The
// registry is the server's, so every subcommand goes through --server.
func gitCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "git", Short: "Pipelines, input sets, templates and entities kept in Git: register, list, remove, run"}
	cmd.AddCommand(gitImportCmd(), gitListCmd(), gitRemoveCmd(), gitRunCmd())
	return cmd
}

// withAPI runs fn through the API of --server.
func withAPI(cmd *cobra.Command, rf remoteFlags, fn func(ctx context.Context, a *apiControl) error) error {
	if rf.server == "" {
		return usageErr("the remote entities are the server's: pass --server URL (or set GANTRY_SERVER)")
	}
	return withControl(cmd, connFlags{}, rf, func(ctx context.Context, c control) error { return fn(ctx, c.(*apiControl)) })
}

func gitImportCmd() *cobra.Command {
	var rf remoteFlags
	var e remote.Entry
	cmd := &cobra.Command{
		Use:   "import KIND IDENTIFIER --connector C [--repo R] --path FILE --branch B",
		Short: "Register an entity kept in Git; the server fetches and validates it first",
		Long: `Registers a pipeline, inputSet, template, service, environment, infrastructure or connector
file, or a policy library (--path names its folder: Rego policies and sets.yaml), kept in a Git repository, as the reference's Git Experience names it: the Git connector (a
connector file of the server's pipelines directory), the repository (for an Account
connector), the file's path and the default branch. The server reads the file at the branch's
head and validates it with what it links; nothing is registered when it does not load, and
every problem is reported at its repository, commit, line and column. Needs create.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e.Kind, e.Identifier = args[0], args[1]
			return withAPI(cmd, rf, func(ctx context.Context, a *apiControl) error {
				var got remote.Entry
				if err := a.do(ctx, "POST", "/api/v1/remote-entities", e, &got); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "registered %s %s: %s in %s at branch %s\n", got.Kind, got.Identifier, got.FilePath, repoOf(got), got.Branch)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&e.ConnectorRef, "connector", "", "the Git connector (connectorRef) that reaches the repository")
	cmd.Flags().StringVar(&e.RepoName, "repo", "", "the repository (repoName), for an Account connector")
	cmd.Flags().StringVar(&e.FilePath, "path", "", "the file's path in the repository (filePath)")
	cmd.Flags().StringVar(&e.Branch, "branch", "main", "the default branch")
	rf.add(cmd, nil)
	return cmd
}

func repoOf(e remote.Entry) string {
	if e.RepoName != "" {
		return e.RepoName + " (connector " + e.ConnectorRef + ")"
	}
	return "connector " + e.ConnectorRef + "'s repository"
}

func gitListCmd() *cobra.Command {
	var rf remoteFlags
	var output string
	cmd := &cobra.Command{
		Use:   "list [-o json]",
		Short: "List the server's remote entities",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return usageErr("--output must be text or json")
			}
			return withAPI(cmd, rf, func(ctx context.Context, a *apiControl) error {
				var out struct {
					Entities []remote.Entry `json:"entities"`
				}
				if err := a.do(ctx, "GET", "/api/v1/remote-entities", nil, &out); err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), out.Entities)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KIND\tIDENTIFIER\tCONNECTOR\tREPO\tFILE\tBRANCH\tDECLARED IN")
				for _, e := range out.Entities {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Kind, e.Identifier, e.ConnectorRef, orDash(e.RepoName), e.FilePath, e.Branch, orDash(e.DeclaredIn))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	rf.add(cmd, nil)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func gitRemoveCmd() *cobra.Command {
	var rf remoteFlags
	cmd := &cobra.Command{
		Use:   "remove KIND IDENTIFIER",
		Short: "Unregister a remote entity (runs that read it keep their recorded commits)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, rf, func(ctx context.Context, a *apiControl) error {
				if err := a.do(ctx, "DELETE", "/api/v1/remote-entities/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s %s\n", args[0], args[1])
				return nil
			})
		},
	}
	rf.add(cmd, nil)
	return cmd
}

func gitRunCmd() *cobra.Command {
	var rf remoteFlags
	var req server.StartRequest
	cmd := &cobra.Command{
		Use:   "run PIPELINE [--branch B | --commit C] [--input-set ID ...] [--set FQN=VALUE ...]",
		Short: "Start a remote pipeline as of a branch or a commit, and print what it read",
		Long: `Starts a registered remote pipeline: every file it needs (the pipeline, the input sets named,
the templates and entities it links) is read from Git at one commit per repository and branch
before anything starts, and the execution records each file's commit. Follow it with
gantry watch EXECUTION.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Pipeline = args[0]
			return withAPI(cmd, rf, func(ctx context.Context, a *apiControl) error {
				var started struct {
					ExecutionID string `json:"executionId"`
					SequenceID  int64  `json:"sequenceId"`
				}
				if err := a.do(ctx, "POST", "/api/v1/executions", req, &started); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "started %s #%d: %s\n", req.Pipeline, started.SequenceID, started.ExecutionID)
				var tree workflows.Node
				if err := a.do(ctx, "GET", execPath(started.ExecutionID), nil, &tree); err == nil && len(tree.Sources) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "read from Git: %s\n", sourcesLine(tree.Sources))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "follow it with: gantry watch %s\n", started.ExecutionID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&req.Branch, "branch", "", "the branch to read (default: the pipeline's default branch)")
	cmd.Flags().StringVar(&req.Commit, "commit", "", "the commit of the pipeline's repository to read")
	cmd.Flags().StringArrayVar(&req.InputSets, "input-set", nil, "a registered remote input set (repeatable, in precedence order)")
	cmd.Flags().StringArrayVar(&req.Sets, "set", nil, "runtime input value as FQN=VALUE (repeatable)")
	rf.add(cmd, nil)
	return cmd
}
