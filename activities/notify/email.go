package notify

import (
	"context"
	"fmt"
	"html"
	"strings"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/stepspec"
)

// Email sends an Email step's message through the notification SMTP server, to its addresses
// and the members of its user groups. The Message-ID comes from the execution and step, so a
// retried step sends the same message again, which mail systems that deduplicate keep once.
// With fireAndForget, a message that cannot be sent is reported in the outputs and the step
// still succeeds.
func (a *Activity) Email(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	spec, err := stepspec.Decode[stepspec.EmailSpec](in.Spec)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "decode Email spec: %v", err)
	}
	mask := &secrets.Masker{}
	s := a.Sender
	expand := func(v string) (string, error) { return secrets.Expand(ctx, s.Secrets, mask, v) }
	subject, err := expand(spec.Subject)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "subject: %v", err)
	}
	body, err := expand(spec.Body)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "body: %v", err)
	}
	to, errTo := s.emailRecipients(spec.To, spec.ToGroups)
	cc, errCc := s.emailRecipients(spec.Cc, spec.CcGroups)
	send := func() error {
		if err := firstError(errTo, errCc); err != nil {
			return err
		}
		if len(to) == 0 {
			return permanent(0, "no recipient: the `to` addresses and the groups' members have no e-mail address")
		}
		if s.SMTP.Host == "" {
			return permanent(0, "no SMTP server configured: start the worker with --smtp-host (and --smtp-from)")
		}
		key := in.ExecutionID + "/" + in.StepPath
		msg := buildMail(s.SMTP.From, to, key, Mail{Subject: subject, Text: body, HTML: "<pre>" + html.EscapeString(body) + "</pre>"})
		if len(cc) > 0 {
			msg = append([]byte("Cc: "+strings.Join(cc, ", ")+"\r\n"), msg...)
		}
		return s.deliverSMTP(ctx, uniq(append(append([]string(nil), to...), cc...)), msg, mask)
	}
	err = send()
	out := map[string]any{"to": strings.Join(to, ","), "cc": strings.Join(cc, ",")}
	if err == nil {
		out["sent"] = "true"
		return contract.StepResult{Outputs: out}, nil
	}
	msg := mask.Apply(err.Error())
	if e, ok := err.(*Error); ok && e.Retryable && spec.FireAndForget != "true" {
		return contract.StepResult{}, fmt.Errorf("send the Email step's message: %s", msg) // retried
	}
	if spec.FireAndForget == "true" {
		out["sent"], out["error"] = "false", msg
		return contract.StepResult{Outputs: out}, nil
	}
	return contract.StepResult{}, contract.Fail(contract.Unknown, "send the Email step's message: %s", msg)
}

// emailRecipients are the comma-separated addresses and the members of the user groups.
func (s *Sender) emailRecipients(addrs string, groups any) ([]string, error) {
	out := strings.Split(addrs, ",")
	var refs []string
	switch g := groups.(type) {
	case []any:
		for _, x := range g {
			refs = append(refs, expressions.ToString(x))
		}
	case string:
		for _, x := range strings.Split(strings.Trim(g, "[]"), ",") {
			refs = append(refs, strings.TrimSpace(x))
		}
	}
	var missing []string
	if len(refs) > 0 {
		dir, err := s.directory()
		if err != nil {
			return nil, err
		}
		for _, ref := range refs {
			if ref == "" {
				continue
			}
			grp, ok := dir.Group(ref)
			if !ok {
				missing = append(missing, ref)
				continue
			}
			out = append(out, dir.Emails(grp.Name)...)
		}
	}
	if len(missing) > 0 {
		return uniq(out), permanent(0, "user groups %s are not in the identity file", strings.Join(missing, ", "))
	}
	return uniq(out), nil
}

func firstError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
