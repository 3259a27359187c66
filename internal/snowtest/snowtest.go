// Package snowtest serves the part of ServiceNow's REST API the ticket steps call, on loopback,
// for tests: the Table API (query, create, update with display values), the UI metadata of a
// table's columns, the Import Set API and the OAuth token endpoint, with ServiceNow's answers
// to bad credentials and unknown tables. No ServiceNow instance can run here; this one checks
// the requests as a real one would and lets a test approve tickets.
package snowtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
)

// Server is a fake ServiceNow instance with change_request and incident tables.
type Server struct {
	*httptest.Server
	User, Password                       string
	ClientID, ClientSecret, RefreshToken string

	mu       sync.Mutex
	records  map[string][]map[string]*field // table → rows
	tokens   map[string]bool
	requests map[string]int
}

type field struct{ Value, Display string }

// Columns are the tables' columns (name → label), with those they inherit from task.
var Columns = map[string]map[string]string{
	"change_request": {"number": "Number", "sys_id": "Sys ID", "short_description": "Short description", "description": "Description",
		"state": "State", "approval": "Approval", "type": "Type", "risk": "Risk", "correlation_id": "Correlation ID",
		"correlation_display": "Correlation display", "start_date": "Planned start date", "end_date": "Planned end date"},
	"incident": {"number": "Number", "sys_id": "Sys ID", "short_description": "Short description", "state": "State",
		"urgency": "Urgency", "correlation_id": "Correlation ID", "correlation_display": "Correlation display"},
}

// States are the change states' stored values by display value.
var States = map[string]string{"New": "-5", "Assess": "-4", "Authorize": "-3", "Scheduled": "-2", "Implement": "-1", "Review": "0", "Closed": "3", "Canceled": "4"}

// Start serves a fake instance.
func Start() *Server {
	s := &Server{User: "gantry.integration", Password: "snow-pass-4417", ClientID: "gantry-client", ClientSecret: "snow-client-secret-88",
		RefreshToken: "snow-refresh-token-301", records: map[string][]map[string]*field{}, tokens: map[string]bool{}, requests: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Set sets a ticket's field, as a person in ServiceNow does ("" display: the value).
func (s *Server) Set(table, number, name, value, display string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.find(table, "number", number); r != nil {
		r[name] = &field{value, cmp.Or(display, value)}
	}
}

// Numbers returns the numbers of a table's tickets, in order.
func (s *Server) Numbers(table string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.records[table] {
		out = append(out, r["number"].Value)
	}
	return out
}

// Requests returns how many requests each endpoint answered ("GET table", "POST table", ...).
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}

func (s *Server) find(table, key, value string) map[string]*field {
	for _, r := range s.records[table] {
		if f := r[key]; f != nil && f.Value == value {
			return r
		}
	}
	return nil
}

var (
	reMeta   = regexp.MustCompile(`^/api/now/ui/meta/([a-z_]+)$`)
	reTable  = regexp.MustCompile(`^/api/now/table/([a-z_]+)$`)
	reRecord = regexp.MustCompile(`^/api/now/table/([a-z_]+)/([0-9a-f]+)$`)
	reImport = regexp.MustCompile(`^/api/now/import/([a-z_]+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path == "/oauth_token.do" {
		s.token(w, r)
		return
	}
	if !s.authorized(r) {
		errorJSON(w, http.StatusUnauthorized, "User Not Authenticated", "Required to provide Auth information")
		return
	}
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet && reMeta.MatchString(p):
		s.requests["GET meta"]++
		cols, ok := Columns[reMeta.FindStringSubmatch(p)[1]]
		if !ok {
			errorJSON(w, http.StatusNotFound, "Invalid table "+reMeta.FindStringSubmatch(p)[1], "")
			return
		}
		out := map[string]any{}
		for name, label := range cols {
			out[name] = map[string]string{"name": name, "label": label}
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": map[string]any{"columns": out}})
	case r.Method == http.MethodGet && reTable.MatchString(p):
		s.requests["GET table"]++
		table := reTable.FindStringSubmatch(p)[1]
		if _, ok := Columns[table]; !ok {
			errorJSON(w, http.StatusBadRequest, "Invalid table "+table, "")
			return
		}
		k, v, _ := strings.Cut(r.URL.Query().Get("sysparm_query"), "=")
		var out []any
		if rec := s.find(table, k, v); rec != nil {
			out = append(out, render(rec, r))
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": out})
	case r.Method == http.MethodPost && reTable.MatchString(p):
		s.requests["POST table"]++
		table := reTable.FindStringSubmatch(p)[1]
		body, ok := decode(w, r)
		if !ok {
			return
		}
		rec := s.insert(table, body)
		writeJSON(w, http.StatusCreated, map[string]any{"result": render(rec, r)})
	case r.Method == http.MethodPatch && reRecord.MatchString(p):
		s.requests["PATCH table"]++
		m := reRecord.FindStringSubmatch(p)
		rec := s.find(m[1], "sys_id", m[2])
		if rec == nil {
			errorJSON(w, http.StatusNotFound, "No Record found", "Record doesn't exist or ACL restricts the record retrieval")
			return
		}
		body, ok := decode(w, r)
		if !ok {
			return
		}
		for k, v := range body {
			if _, known := Columns[m[1]][k]; known { // the Table API ignores unknown fields
				rec[k] = display(k, fmt.Sprint(v))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": render(rec, r)})
	case r.Method == http.MethodPost && reImport.MatchString(p):
		s.requests["POST import"]++
		staging := reImport.FindStringSubmatch(p)[1]
		if staging != "u_gantry_change_import" {
			errorJSON(w, http.StatusNotFound, "Invalid table "+staging, "")
			return
		}
		body, ok := decode(w, r)
		if !ok {
			return
		}
		row := map[string]any{"short_description": body["u_summary"], "risk": body["u_risk"]}
		rec := s.insert("change_request", row)
		n := rec["number"].Value
		writeJSON(w, http.StatusCreated, map[string]any{"import_set": fmt.Sprintf("ISET%07d", len(s.records["change_request"])), "staging_table": staging,
			"result": []map[string]string{{"transform_map": "Gantry change import", "table": "change_request", "display_name": "number", "display_value": n,
				"record_link": s.URL + "/api/now/table/change_request/" + rec["sys_id"].Value, "status": "inserted", "sys_id": rec["sys_id"].Value}}})
	default:
		errorJSON(w, http.StatusBadRequest, "Requested URI does not represent any resource", r.URL.Path)
	}
}

func (s *Server) insert(table string, body map[string]any) map[string]*field {
	n := len(s.records[table]) + 1
	prefix := map[string]string{"change_request": "CHG", "incident": "INC"}[table]
	rec := map[string]*field{"number": {fmt.Sprintf("%s%07d", prefix, n), ""}, "sys_id": {fmt.Sprintf("%032x", 0xa000+n+len(table)*1000), ""},
		"state": display("state", "-5"), "approval": display("approval", "requested")}
	for k, v := range body {
		if _, known := Columns[table][k]; known && v != nil {
			rec[k] = display(k, fmt.Sprint(v))
		}
	}
	for _, f := range rec {
		f.Display = cmp.Or(f.Display, f.Value)
	}
	s.records[table] = append(s.records[table], rec)
	return rec
}

// display is a field as ServiceNow stores it: a state by its stored value, shown by name.
func display(name, v string) *field {
	switch name {
	case "state":
		for d, sv := range States {
			if sv == v || d == v {
				return &field{sv, d}
			}
		}
	case "approval":
		return &field{v, strings.ToUpper(v[:1]) + v[1:]}
	}
	return &field{v, v}
}

// render answers a record as the Table API does: values, or values and display values with
// sysparm_display_value=all.
func render(rec map[string]*field, r *http.Request) map[string]any {
	out := map[string]any{}
	all := r.URL.Query().Get("sysparm_display_value") == "all"
	for k, f := range rec {
		if all {
			out[k] = map[string]string{"value": f.Value, "display_value": f.Display}
		} else {
			out[k] = f.Value
		}
	}
	return out
}

func (s *Server) authorized(r *http.Request) bool {
	if user, pass, ok := r.BasicAuth(); ok {
		return user == s.User && pass == s.Password
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && s.tokens[tok]
}

// token trades the refresh token for an access token (grant_type=refresh_token).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.requests["POST token"]++
	_ = r.ParseForm()
	if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("client_id") != s.ClientID ||
		r.PostForm.Get("client_secret") != s.ClientSecret || r.PostForm.Get("refresh_token") != s.RefreshToken {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "access_denied", "error_description": "access_denied"})
		return
	}
	tok := fmt.Sprintf("snow-access-%d", len(s.tokens)+1)
	s.tokens[tok] = true
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 1799, "scope": "useraccount"})
}

func decode(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		errorJSON(w, http.StatusUnsupportedMediaType, "Unsupported Media Type", r.Header.Get("Content-Type"))
		return nil, false
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		errorJSON(w, http.StatusBadRequest, "Exception while reading request", err.Error())
		return nil, false
	}
	return body, true
}

func errorJSON(w http.ResponseWriter, code int, msg, detail string) {
	writeJSON(w, code, map[string]any{"error": map[string]string{"message": msg, "detail": detail}, "status": "failure"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
