package tickets

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/contract"
)

// snowColumns reads a table's columns (with those it inherits, as ServiceNow's UI metadata
// lists them): the fields a ticket of that type takes. An unknown ticket type fails naming it.
func (c *client) snowColumns(ctx context.Context, table string) (map[string]string, error) {
	var meta struct {
		Result struct {
			Columns map[string]struct {
				Name  string `json:"name"`
				Label string `json:"label"`
			} `json:"columns"`
		} `json:"result"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/now/ui/meta/"+esc(table), nil, &meta); err != nil {
		if se, ok := err.(*statusError); ok && (se.code == http.StatusNotFound || se.code == http.StatusBadRequest) {
			return nil, contract.Fail(contract.Unknown, "ServiceNow has no ticket type (table) %q: %s", table, se.message)
		}
		return nil, c.fail(err, "read the fields of ServiceNow table "+table)
	}
	if len(meta.Result.Columns) == 0 {
		return nil, contract.Fail(contract.Unknown, "ServiceNow has no ticket type (table) %q", table)
	}
	out := map[string]string{}
	for name, col := range meta.Result.Columns {
		out[cmp.Or(col.Name, name)] = col.Label
	}
	return out, nil
}

// snowFields maps the pipeline's fields onto the table's columns, by name (or label); a field
// the table does not have fails naming the ones it has: ServiceNow itself ignores them.
func snowFields(in []Field, columns map[string]string, table string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range in {
		name := ""
		if _, ok := columns[f.Name]; ok {
			name = f.Name
		} else {
			for n, label := range columns {
				if strings.EqualFold(label, f.Name) {
					name = n
				}
			}
		}
		if name == "" {
			var names []string
			for n := range columns {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, contract.Fail(contract.Unknown, "ServiceNow table %s has no field %q; its fields are: %s", table, f.Name, strings.Join(names, ", "))
		}
		out[name] = f.Value
	}
	return out, nil
}

// snowRecord is a row as the Table API answers with sysparm_display_value=all: each field's
// value and display value.
type snowRecord map[string]any

// snowFind reads the ticket of a table by a query ("" sys_id when none).
func (c *client) snowFind(ctx context.Context, table, query string) (snowRecord, error) {
	var found struct {
		Result []snowRecord `json:"result"`
	}
	q := "?sysparm_display_value=all&sysparm_exclude_reference_link=true&sysparm_limit=1&sysparm_query=" + url.QueryEscape(query)
	if err := c.do(ctx, http.MethodGet, "/api/now/table/"+esc(table)+q, nil, &found); err != nil {
		return nil, c.fail(err, "read ServiceNow table "+table)
	}
	if len(found.Result) == 0 {
		return nil, nil
	}
	return found.Result[0], nil
}

// ServiceNowCreate opens a ticket and reads it back. The ticket carries the step's mark in
// correlation_id: a retried step finds the ticket an earlier attempt opened.
func (c *client) ServiceNowCreate(ctx context.Context, table string, fields []Field, mark string) (map[string]any, error) {
	columns, err := c.snowColumns(ctx, table)
	if err != nil {
		return nil, err
	}
	body, err := snowFields(fields, columns, table)
	if err != nil {
		return nil, err
	}
	if _, ok := columns["correlation_id"]; ok {
		if _, set := body["correlation_id"]; !set {
			body["correlation_id"], body["correlation_display"] = mark, "Gantry"
		}
		rec, err := c.snowFind(ctx, table, "correlation_id="+fmt.Sprint(body["correlation_id"]))
		if err != nil {
			return nil, err
		}
		if rec != nil {
			return c.snowTicket(table, rec), nil
		}
	}
	var created struct {
		Result snowRecord `json:"result"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/now/table/"+esc(table)+"?sysparm_display_value=all&sysparm_exclude_reference_link=true", body, &created); err != nil {
		return nil, c.fail(err, "create a ServiceNow "+table)
	}
	return c.snowTicket(table, created.Result), nil
}

// ServiceNowUpdate sets a ticket's fields and reads it back.
func (c *client) ServiceNowUpdate(ctx context.Context, table, number string, fields []Field) (map[string]any, error) {
	columns, err := c.snowColumns(ctx, table)
	if err != nil {
		return nil, err
	}
	body, err := snowFields(fields, columns, table)
	if err != nil {
		return nil, err
	}
	rec, err := c.snowFind(ctx, table, "number="+number)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, contract.Fail(contract.Unknown, "ServiceNow has no %s %s", table, number)
	}
	var updated struct {
		Result snowRecord `json:"result"`
	}
	path := "/api/now/table/" + esc(table) + "/" + esc(snowValue(rec["sys_id"])) + "?sysparm_display_value=all&sysparm_exclude_reference_link=true"
	if err := c.do(ctx, http.MethodPatch, path, body, &updated); err != nil {
		return nil, c.fail(err, "update ServiceNow "+table+" "+number)
	}
	return c.snowTicket(table, updated.Result), nil
}

// ServiceNowRead reads a ticket for an approval.
func (c *client) ServiceNowRead(ctx context.Context, table, number string) (map[string]any, error) {
	rec, err := c.snowFind(ctx, table, "number="+number)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, contract.Fail(contract.Unknown, "ServiceNow has no %s %s", table, number)
	}
	return c.snowTicket(table, rec), nil
}

// ServiceNowImport posts a row to an import set's staging table and reports what the transform
// maps made of it.
func (c *client) ServiceNowImport(ctx context.Context, staging, jsonBody string, fields []Field) (map[string]any, error) {
	var body any
	if jsonBody != "" {
		if err := json.Unmarshal([]byte(jsonBody), &body); err != nil {
			return nil, contract.Fail(contract.Unknown, "import data jsonBody is not JSON: %v", err)
		}
	} else {
		m := map[string]any{}
		for _, f := range fields {
			m[f.Name] = f.Value
		}
		body = m
	}
	var res struct {
		ImportSet    string `json:"import_set"`
		StagingTable string `json:"staging_table"`
		Result       []struct {
			TransformMap string `json:"transform_map"`
			Table        string `json:"table"`
			DisplayName  string `json:"display_name"`
			DisplayValue string `json:"display_value"`
			RecordLink   string `json:"record_link"`
			Status       string `json:"status"`
			SysID        string `json:"sys_id"`
			StatusMsg    string `json:"status_message"`
			ErrorMessage string `json:"error_message"`
		} `json:"result"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/now/import/"+esc(staging), body, &res); err != nil {
		if se, ok := err.(*statusError); ok && se.code == http.StatusNotFound {
			return nil, contract.Fail(contract.Unknown, "ServiceNow has no import set staging table %q: %s", staging, se.message)
		}
		return nil, c.fail(err, "import into ServiceNow staging table "+staging)
	}
	var outcomes []any
	for _, r := range res.Result {
		if r.Status == "error" {
			return nil, contract.Fail(contract.Unknown, "ServiceNow's transform map %s refused the row: %s", r.TransformMap, cmp.Or(r.ErrorMessage, r.StatusMsg))
		}
		outcomes = append(outcomes, map[string]any{"transformMap": r.TransformMap, "table": r.Table, "displayName": r.DisplayName,
			"displayValue": r.DisplayValue, "recordURL": r.RecordLink, "status": r.Status, "sysId": r.SysID})
	}
	return map[string]any{"importSet": res.ImportSet, "stagingTable": res.StagingTable, "transformMapOutcomes": outcomes}, nil
}

// snowTicket is a ticket as steps expose it: its number, URL and each field's value and
// display value (<+ticket.state.displayValue>).
func (c *client) snowTicket(table string, rec snowRecord) map[string]any {
	fields := map[string]any{}
	for k, v := range rec {
		f := map[string]any{"value": snowValue(v), "displayValue": snowDisplay(v)}
		fields[k] = f
	}
	number := snowValue(rec["number"])
	u := c.base + "/nav_to.do?uri=/" + table + ".do?sysparm_query=number=" + number
	out := map[string]any{"ticketNumber": number, "number": number, "ticketUrl": u, "url": u, "fields": fields}
	for k, v := range fields {
		if _, taken := out[k]; !taken {
			out[k] = v
		}
	}
	return out
}

// snowValue is a field's stored value, whether the answer carried display values or not.
func snowValue(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fieldText(m["value"])
	}
	return fieldText(v)
}

// snowDisplay is a field's display value.
func snowDisplay(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fieldText(m["display_value"])
	}
	return fieldText(v)
}

// oauthToken is an access token and when it expires.
type oauthToken struct {
	value   string
	expires time.Time
}

// accessToken trades the connector's refresh token for an access token, reused until a minute
// before it expires.
func (a *Activity) accessToken(ctx context.Context, c *client) (string, error) {
	conn := c.conn
	resolve := func(ref string) (string, error) {
		if ref == "" {
			return "", nil
		}
		v, err := a.Secrets.Resolve(ctx, ref)
		if err != nil {
			return "", contract.Fail(contract.Authentication, "connector %s: %v", conn.ID, err)
		}
		c.mask.Add(v)
		return v, nil
	}
	refresh, err := resolve(conn.RefreshTokenRef)
	if err != nil {
		return "", err
	}
	id, err := resolve(conn.ClientIDRef)
	if err != nil {
		return "", err
	}
	secret, err := resolve(conn.ClientSecretRef)
	if err != nil {
		return "", err
	}
	key := conn.ID + "\x00" + shortHash(refresh+id)
	a.mu.Lock()
	if t, ok := a.tokens[key]; ok && time.Now().Before(t.expires) {
		a.mu.Unlock()
		c.mask.Add(t.value)
		return t.value, nil
	}
	a.mu.Unlock()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {id}}
	if secret != "" {
		form.Set("client_secret", secret)
	}
	if conn.Scope != "" {
		form.Set("scope", conn.Scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, conn.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", contract.Fail(contract.Unknown, "connector %s: token URL: %v", conn.ID, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("connector %s: get an access token: %s", conn.ID, c.mask.Apply(err.Error()))
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	switch {
	case resp.StatusCode >= 500:
		return "", fmt.Errorf("connector %s: the token endpoint answered HTTP %d", conn.ID, resp.StatusCode)
	case resp.StatusCode >= 300 || tok.AccessToken == "":
		return "", contract.Fail(contract.Authentication, "connector %s: the token endpoint refused the refresh token (HTTP %d): %s", conn.ID, resp.StatusCode, c.mask.Apply(strings.TrimSpace(tok.Error+" "+tok.Description)))
	}
	c.mask.Add(tok.AccessToken)
	life := time.Duration(max(tok.ExpiresIn, 120)) * time.Second
	a.mu.Lock()
	if a.tokens == nil {
		a.tokens = map[string]oauthToken{}
	}
	a.tokens[key] = oauthToken{value: tok.AccessToken, expires: time.Now().Add(life - time.Minute)}
	a.mu.Unlock()
	return tok.AccessToken, nil
}
