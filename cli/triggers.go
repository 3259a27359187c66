package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/triggers"
)

func triggersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trigger", Aliases: []string{"triggers"}, Short: "Test triggers and list webhook deliveries"}
	var dataDir, output string
	var limit int
	events := &cobra.Command{
		Use:   "events",
		Short: "List recent webhook deliveries and what became of them, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, err := (&triggers.EventLog{Path: eventsPath(dataDir)}).Last(limit)
			if err != nil {
				return usageErr("%v", err)
			}
			if output == "json" {
				return printJSON(cmd.OutOrStdout(), struct {
					Deliveries []triggers.Record `json:"deliveries"`
				}{append([]triggers.Record{}, recs...)})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tPROVIDER\tDELIVERY\tTRIGGER\tSTATUS\tEXECUTION\tREASON")
			for _, r := range recs {
				exec := r.ExecutionID
				if r.Duplicate {
					exec += " (duplicate)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), r.Provider, r.DeliveryID, r.Trigger, r.Status, exec, r.Reason)
			}
			return tw.Flush()
		},
	}
	events.Flags().StringVar(&dataDir, "data-dir", defaultDataDir(), "data directory of the gantry server")
	events.Flags().IntVar(&limit, "limit", 50, "at most this many deliveries")
	events.Flags().StringVarP(&output, "output", "o", "text", "text or json")

	var headers []string
	var strict bool
	test := &cobra.Command{
		Use:   "test TRIGGER.yaml PAYLOAD.json [--header Name=Value ...]",
		Short: "Show whether a payload would fire a trigger, and the trigger values it would pass, without starting anything",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := load.File(args[0], load.Options{Strict: strict})
			if err != nil {
				return usageErr("%v", err)
			}
			if !r.OK() || r.File.Trigger == nil {
				fmt.Fprint(cmd.ErrOrStderr(), r.Diags.Render(r.Sources))
				return &exitError{code: ExitInvalid, err: fmt.Errorf("%s is not a valid trigger file", args[0])}
			}
			body, err := os.ReadFile(args[1])
			if err != nil {
				return usageErr("%v", err)
			}
			h := http.Header{}
			if err := eachPair("--header", "Name=Value", headers, h.Add); err != nil {
				return err
			}
			t := r.File.Trigger
			provider := "Custom"
			if ty := pipeline.Field(t.Source.Spec, "type"); ty != nil {
				provider = ty.Value
			}
			ev, err := triggers.Parse(provider, h, body)
			if err != nil {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("payload: %v (give the provider's event header, e.g. --header X-GitHub-Event=push)", err)}
			}
			v := triggers.Evaluate(t, ev)
			out := map[string]any{"trigger": t.Identifier, "match": v.Match, "status": v.Status}
			if v.Reason != "" {
				out["reason"] = v.Reason
			}
			data := ev.Data()
			delete(data, "payload")
			delete(data, "eventPayload")
			out["values"] = data
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(out); err != nil {
				return err
			}
			if !v.Match {
				return &exitError{code: ExitInvalid}
			}
			return nil
		},
	}
	test.Flags().StringArrayVar(&headers, "header", nil, "request header Name=Value (repeatable), e.g. X-GitHub-Event=push")
	strictFlag(test, &strict)
	cmd.AddCommand(events, test)
	return cmd
}
