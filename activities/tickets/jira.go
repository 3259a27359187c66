package tickets

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gantry-cd/gantry/contract"
)

// jiraField is a field as Jira's create and edit metadata describe it.
type jiraField struct {
	ID            string           `json:"fieldId"`
	Key           string           `json:"key"`
	Name          string           `json:"name"`
	Required      bool             `json:"required"`
	Schema        jiraSchema       `json:"schema"`
	AllowedValues []map[string]any `json:"allowedValues"`
}

type jiraSchema struct {
	Type   string `json:"type"`
	Items  string `json:"items"`
	System string `json:"system"`
	Custom string `json:"custom"`
}

// jiraIssue is an issue as Jira answers a read with expand=names.
type jiraIssue struct {
	ID     string            `json:"id"`
	Key    string            `json:"key"`
	Fields map[string]any    `json:"fields"`
	Names  map[string]string `json:"names"`
}

// Field is a field to set, by name or id, and its value as the pipeline wrote it.
type Field struct{ Name, Value string }

// jiraIssueType reads the issue types of a project and returns the id of the named one, or a
// failure listing those the server reported.
func (c *client) jiraIssueType(ctx context.Context, project, name string) (string, error) {
	var types struct {
		Values []struct{ ID, Name string } `json:"values"`
	}
	if err := c.do(ctx, http.MethodGet, "/rest/api/2/issue/createmeta/"+esc(project)+"/issuetypes", nil, &types); err != nil {
		if se, ok := err.(*statusError); ok && se.code == http.StatusNotFound {
			return "", contract.Fail(contract.Unknown, "Jira has no project %s (or the connector's user cannot see it): %s", project, se.message)
		}
		return "", c.fail(err, "read the issue types of Jira project "+project)
	}
	var names []string
	for _, t := range types.Values {
		if strings.EqualFold(t.Name, name) || t.ID == name {
			return t.ID, nil
		}
		names = append(names, t.Name)
	}
	return "", contract.Fail(contract.Unknown, "Jira project %s has no issue type %q; its issue types are: %s", project, name, strings.Join(names, ", "))
}

// jiraCreateFields reads the fields an issue type takes on creation.
func (c *client) jiraCreateFields(ctx context.Context, project, typeID string) ([]jiraField, error) {
	var meta struct {
		Values []jiraField `json:"values"`
	}
	if err := c.do(ctx, http.MethodGet, "/rest/api/2/issue/createmeta/"+esc(project)+"/issuetypes/"+esc(typeID), nil, &meta); err != nil {
		return nil, c.fail(err, "read the create fields of Jira project "+project)
	}
	for i := range meta.Values {
		meta.Values[i].ID = cmp.Or(meta.Values[i].ID, meta.Values[i].Key)
	}
	return meta.Values, nil
}

// jiraEditFields reads the fields an issue can be edited in.
func (c *client) jiraEditFields(ctx context.Context, key string) ([]jiraField, error) {
	var meta struct {
		Fields map[string]jiraField `json:"fields"`
	}
	if err := c.do(ctx, http.MethodGet, "/rest/api/2/issue/"+esc(key)+"/editmeta", nil, &meta); err != nil {
		return nil, c.jiraIssueFail(err, key, "read the editable fields of")
	}
	var out []jiraField
	for id, f := range meta.Fields {
		f.ID = cmp.Or(f.ID, f.Key, id)
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b jiraField) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// jiraFields turns the pipeline's fields into Jira's shape for the fields it accepts; a field
// it does not take fails naming the ones it does.
func jiraFields(in []Field, meta []jiraField, what string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range in {
		i := slices.IndexFunc(meta, func(m jiraField) bool {
			return m.ID == f.Name || strings.EqualFold(m.Name, f.Name)
		})
		if i < 0 {
			var names []string
			for _, m := range meta {
				names = append(names, m.Name)
			}
			slices.Sort(names)
			return nil, contract.Fail(contract.Unknown, "Jira does not take field %q %s; the fields it takes are: %s", f.Name, what, strings.Join(names, ", "))
		}
		m := meta[i]
		v, err := jiraValue(m, f.Value)
		if err != nil {
			return nil, contract.Fail(contract.Unknown, "Jira field %s: %v", m.Name, err)
		}
		out[m.ID] = v
	}
	return out, nil
}

// jiraValue converts a value written as text to the shape the field's schema wants: options
// and priorities by name, arrays comma-separated, numbers as numbers.
func jiraValue(m jiraField, s string) (any, error) {
	switch m.Schema.Type {
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return n, nil
	case "option":
		return map[string]any{"value": s}, nil
	case "priority", "version", "component", "resolution":
		return map[string]any{"name": s}, nil
	case "user":
		return map[string]any{"name": s, "accountId": s}, nil
	case "array":
		var out []any
		for _, x := range strings.Split(s, ",") {
			x = strings.TrimSpace(x)
			if x == "" {
				continue
			}
			switch m.Schema.Items {
			case "string":
				out = append(out, x)
			case "option":
				out = append(out, map[string]any{"value": x})
			default:
				out = append(out, map[string]any{"name": x})
			}
		}
		return out, nil
	case "issuelink":
		return map[string]any{"key": s}, nil
	}
	if m.ID == "parent" {
		return map[string]any{"key": s}, nil
	}
	return s, nil
}

// JiraCreate opens an issue and reads it back. An earlier attempt of the same step that created
// it is found by the label it set, so a retried step never opens a second issue.
func (c *client) JiraCreate(ctx context.Context, project, issueType string, fields []Field, mark string) (map[string]any, error) {
	typeID, err := c.jiraIssueType(ctx, project, issueType)
	if err != nil {
		return nil, err
	}
	meta, err := c.jiraCreateFields(ctx, project, typeID)
	if err != nil {
		return nil, err
	}
	body, err := jiraFields(fields, meta, "on creating a "+issueType+" in "+project)
	if err != nil {
		return nil, err
	}
	labelled := slices.ContainsFunc(meta, func(m jiraField) bool { return m.ID == "labels" })
	if labelled {
		if key, err := c.jiraFind(ctx, project, mark); err != nil {
			return nil, err
		} else if key != "" {
			return c.JiraRead(ctx, key)
		}
		labels, _ := body["labels"].([]any)
		body["labels"] = append(labels, mark)
	}
	body["project"] = map[string]any{"key": project}
	body["issuetype"] = map[string]any{"id": typeID}
	var created struct{ ID, Key string }
	if err := c.do(ctx, http.MethodPost, "/rest/api/2/issue", map[string]any{"fields": body}, &created); err != nil {
		return nil, c.fail(err, "create a "+issueType+" in Jira project "+project)
	}
	return c.JiraRead(ctx, created.Key)
}

// jiraFind returns the key of the project's issue carrying the label ("" when none).
func (c *client) jiraFind(ctx context.Context, project, label string) (string, error) {
	jql := fmt.Sprintf(`project = "%s" AND labels = "%s"`, project, label)
	var found struct {
		Issues []struct{ Key string } `json:"issues"`
	}
	q := "?fields=key&maxResults=1&jql=" + url.QueryEscape(jql)
	err := c.do(ctx, http.MethodGet, "/rest/api/2/search/jql"+q, nil, &found)
	if se, ok := err.(*statusError); ok && se.code == http.StatusNotFound {
		// Jira Data Center searches at the older endpoint.
		err = c.do(ctx, http.MethodGet, "/rest/api/2/search"+q, nil, &found)
	}
	if err != nil {
		return "", c.fail(err, "look for an issue an earlier attempt created")
	}
	if len(found.Issues) == 0 {
		return "", nil
	}
	return found.Issues[0].Key, nil
}

// JiraUpdate sets an issue's fields, moves it to a status, and reads it back.
func (c *client) JiraUpdate(ctx context.Context, key string, fields []Field, status, transition string) (map[string]any, error) {
	if len(fields) > 0 {
		meta, err := c.jiraEditFields(ctx, key)
		if err != nil {
			return nil, err
		}
		body, err := jiraFields(fields, meta, "on editing "+key)
		if err != nil {
			return nil, err
		}
		if err := c.do(ctx, http.MethodPut, "/rest/api/2/issue/"+esc(key), map[string]any{"fields": body}, nil); err != nil {
			return nil, c.jiraIssueFail(err, key, "update")
		}
	}
	if status != "" {
		if err := c.jiraTransition(ctx, key, status, transition); err != nil {
			return nil, err
		}
	}
	return c.JiraRead(ctx, key)
}

// jiraTransition moves an issue to a status. An issue already there is left alone, so that a
// retried step does not fail on its own earlier attempt.
func (c *client) jiraTransition(ctx context.Context, key, status, name string) error {
	var cur struct {
		Fields struct {
			Status struct{ Name string } `json:"status"`
		} `json:"fields"`
	}
	if err := c.do(ctx, http.MethodGet, "/rest/api/2/issue/"+esc(key)+"?fields=status", nil, &cur); err != nil {
		return c.jiraIssueFail(err, key, "read the status of")
	}
	if strings.EqualFold(cur.Fields.Status.Name, status) {
		return nil
	}
	var tr struct {
		Transitions []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			To   struct {
				Name string `json:"name"`
			} `json:"to"`
		} `json:"transitions"`
	}
	if err := c.do(ctx, http.MethodGet, "/rest/api/2/issue/"+esc(key)+"/transitions", nil, &tr); err != nil {
		return c.jiraIssueFail(err, key, "read the transitions of")
	}
	var offered []string
	for _, t := range tr.Transitions {
		if strings.EqualFold(t.To.Name, status) && (name == "" || strings.EqualFold(t.Name, name)) {
			if err := c.do(ctx, http.MethodPost, "/rest/api/2/issue/"+esc(key)+"/transitions", map[string]any{"transition": map[string]any{"id": t.ID}}, nil); err != nil {
				return c.jiraIssueFail(err, key, "transition")
			}
			return nil
		}
		offered = append(offered, fmt.Sprintf("%s (to %s)", t.Name, t.To.Name))
	}
	what := "status " + status
	if name != "" {
		what = fmt.Sprintf("status %s through transition %s", status, name)
	}
	return contract.Fail(contract.Unknown, "Jira issue %s (now %s) cannot move to %s; the transitions it offers are: %s", key, cur.Fields.Status.Name, what, strings.Join(offered, ", "))
}

// JiraRead reads an issue: its key, id, URL and each field by its name (and its id), values
// as text (an option, status or priority by its name, a user by display name, lists
// comma-separated).
func (c *client) JiraRead(ctx context.Context, key string) (map[string]any, error) {
	var is jiraIssue
	if err := c.do(ctx, http.MethodGet, "/rest/api/2/issue/"+esc(key)+"?expand=names", nil, &is); err != nil {
		return nil, c.jiraIssueFail(err, key, "read")
	}
	fields := map[string]any{}
	for id, v := range is.Fields {
		text := fieldText(v)
		fields[id] = text
		if name := is.Names[id]; name != "" {
			fields[name] = text
		}
	}
	out := map[string]any{"id": is.ID, "key": is.Key, "url": c.base + "/browse/" + is.Key, "fields": fields}
	// The reference also reads fields at the issue's top level (<+issue.Status>).
	for k, v := range fields {
		if _, taken := out[k]; !taken {
			out[k] = v
		}
	}
	return out, nil
}

// jiraIssueFail names the issue in a failure; an issue that does not exist is the pipeline's
// to fix.
func (c *client) jiraIssueFail(err error, key, what string) error {
	if se, ok := err.(*statusError); ok && se.code == http.StatusNotFound {
		return contract.Fail(contract.Unknown, "Jira has no issue %s (or the connector's user cannot see it): %s", key, se.message)
	}
	return c.fail(err, what+" Jira issue "+key)
}

// fieldText renders a field's value as text.
func fieldText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		for _, k := range []string{"value", "name", "displayName", "key", "display_value"} {
			if s, ok := x[k].(string); ok {
				return s
			}
		}
		return ""
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, fieldText(e))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}
