package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/identity"
)

// editIdentity loads the identity file, applies change and saves it.
func editIdentity(path string, change func(d *identity.Directory) error) error {
	dir, err := identity.Load(path)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := change(dir); err != nil {
		return usageErr("%v", err)
	}
	if err := dir.Save(path); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// identityFlags are the flags of commands that edit the identity file.
func identityFlags(cmd *cobra.Command, conn *connFlags, id *idFlags) {
	cmd.Flags().StringVar(&conn.dataDir, "data-dir", defaultDataDir(), "data directory holding users.yaml")
	cmd.Flags().StringVar(&id.file, "identity", "", "identity file (default DATA_DIR/users.yaml)")
}

func userCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Manage users, groups and API tokens in the identity file"}
	var conn connFlags
	var id idFlags
	var email string
	var groups, roles, trigs []string
	add := &cobra.Command{
		Use:   "add NAME [--group G ...] [--role R ...] [--trigger PATTERN ...] [--email E]",
		Short: "Create a user (or add groups) and print a new API token; only its hash is stored",
		Long: `Creates a user, or adds groups to one, and prints a new API token (only its hash is stored).
--role grants each role to the --group groups, or, without --group, to a group named after the
role that the user joins. --trigger makes the user the service identity of the webhook and cron
triggers whose identifiers match the pattern.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := id.path(conn.dataDir)
			var tok string
			err := editIdentity(path, func(dir *identity.Directory) error {
				gs := groups
				if len(gs) == 0 {
					gs = roles
				}
				for _, r := range roles {
					for _, g := range gs {
						if err := dir.Grant(g, r); err != nil {
							return err
						}
					}
				}
				var err error
				if tok, err = dir.AddUser(args[0], email, gs); err != nil {
					return err
				}
				return dir.SetTriggers(args[0], trigs)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", tok)
			fmt.Fprintf(cmd.ErrOrStderr(), "token for %s saved (hashed) in %s; it is shown only now\n", args[0], path)
			return nil
		},
	}
	add.Flags().StringVar(&email, "email", "", "e-mail recorded with approvals")
	add.Flags().StringArrayVar(&groups, "group", nil, "user group (repeatable)")
	add.Flags().StringArrayVar(&roles, "role", nil, "role the user's groups hold (repeatable; see gantry role add)")
	add.Flags().StringArrayVar(&trigs, "trigger", nil, "trigger identifier pattern this user is the service identity of (repeatable)")
	identityFlags(add, &conn, &id)
	cmd.AddCommand(add)
	return cmd
}

func roleCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "role", Short: "Manage roles: what a group's members may do on which pipelines and environments",
		Long: `Roles grant actions on pipelines (by identifier pattern) and, for execute, on the environments
of Deployment stages (identifier or type patterns): view, execute, abort, create, admin. Groups
hold roles; users hold groups. An identity file without roles lets every user do everything.`}
	cmd.AddCommand(roleAddCmd(), roleGrantCmd(false), roleGrantCmd(true), roleRemoveCmd(), roleListCmd())
	return cmd
}

func roleAddCmd() *cobra.Command {
	var conn connFlags
	var id idFlags
	var actions, pipelines, envs []string
	var description string
	add := &cobra.Command{
		Use:   "add NAME --allow ACTION,... [--pipeline PATTERN ...] [--environment PATTERN ...]",
		Short: "Define a role, or add a permission to one",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(actions) == 0 {
				return usageErr("--allow names the actions: view, execute, abort, create, admin")
			}
			perm := identity.Permission{Pipelines: pipelines, Environments: envs}
			for _, a := range actions {
				perm.Actions = append(perm.Actions, identity.Action(strings.TrimSpace(a)))
			}
			return editIdentity(id.path(conn.dataDir), func(dir *identity.Directory) error {
				r, _ := dir.Role(args[0])
				r.Name = args[0]
				if description != "" {
					r.Description = description
				}
				r.Permissions = append(r.Permissions, perm)
				return dir.SetRole(r)
			})
		},
	}
	add.Flags().StringSliceVar(&actions, "allow", nil, "actions (comma-separated or repeated): view, execute, abort, create, admin")
	add.Flags().StringArrayVar(&pipelines, "pipeline", nil, "pipeline identifier pattern, e.g. web-* (repeatable; default all)")
	add.Flags().StringArrayVar(&envs, "environment", nil, "environment identifier or type pattern for execute, e.g. PreProduction (repeatable; default all)")
	add.Flags().StringVar(&description, "description", "", "what the role is for")
	identityFlags(add, &conn, &id)
	return add
}

// roleGrantCmd is `role grant`, or with revoke `role revoke`.
func roleGrantCmd(revoke bool) *cobra.Command {
	var conn connFlags
	var id idFlags
	var groups []string
	use, short := "grant ROLE --group G ...", "Give a role to groups"
	if revoke {
		use, short = "revoke ROLE --group G ...", "Take a role from groups (applies to the next request)"
	}
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(groups) == 0 {
				return usageErr("--group names the groups")
			}
			return editIdentity(id.path(conn.dataDir), func(dir *identity.Directory) error {
				for _, g := range groups {
					if revoke {
						if !dir.Revoke(g, args[0]) {
							return fmt.Errorf("group %s does not hold role %s", g, args[0])
						}
					} else if err := dir.Grant(g, args[0]); err != nil {
						return err
					}
				}
				return nil
			})
		}}
	c.Flags().StringArrayVar(&groups, "group", nil, "group (repeatable)")
	identityFlags(c, &conn, &id)
	return c
}

func roleRemoveCmd() *cobra.Command {
	var conn connFlags
	var id idFlags
	remove := &cobra.Command{Use: "remove NAME", Short: "Delete a role and every group's hold on it", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editIdentity(id.path(conn.dataDir), func(dir *identity.Directory) error {
				if !dir.RemoveRole(args[0]) {
					return fmt.Errorf("no role %q", args[0])
				}
				return nil
			})
		}}
	identityFlags(remove, &conn, &id)
	return remove
}

func roleListCmd() *cobra.Command {
	var conn connFlags
	var id idFlags
	list := &cobra.Command{Use: "list", Short: "List roles, their permissions and the groups that hold them", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := identity.Load(id.path(conn.dataDir))
			if err != nil {
				return usageErr("%v", err)
			}
			if !dir.Enforcing() {
				fmt.Fprintln(cmd.OutOrStdout(), "no roles: every user may do everything (define one with gantry role add)")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ROLE\tACTIONS\tPIPELINES\tENVIRONMENTS\tGROUPS")
			for _, r := range dir.Roles {
				var holders []string
				for _, g := range dir.Groups {
					for _, name := range g.Roles {
						if name == r.Name {
							holders = append(holders, g.Name)
						}
					}
				}
				for _, p := range r.Permissions {
					acts := make([]string, len(p.Actions))
					for i, a := range p.Actions {
						acts[i] = string(a)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(acts, ","), orAll(p.Pipelines), orAll(p.Environments), strings.Join(holders, ","))
				}
			}
			return tw.Flush()
		}}
	identityFlags(list, &conn, &id)
	return list
}

func orAll(patterns []string) string {
	if len(patterns) == 0 {
		return "*"
	}
	return strings.Join(patterns, ",")
}
