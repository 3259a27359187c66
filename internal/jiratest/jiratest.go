// Package jiratest serves the part of Jira's REST API (v2) the ticket steps call, on loopback,
// for tests: create metadata, issues, edit metadata, transitions and search, with Jira's
// answers to bad credentials, unknown projects, issue types and fields. No Jira server can run
// here; this one checks the requests as a real one would and lets a test move issues.
package jiratest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Field is a field an issue type takes.
type Field struct {
	ID       string   `json:"fieldId"`
	Name     string   `json:"name"`
	Type     string   `json:"-"` // string, number, option, priority, array
	Items    string   `json:"-"`
	Required bool     `json:"required"`
	Allowed  []string `json:"-"`
}

// Server is a fake Jira site with one project of Bug and Change issue types.
type Server struct {
	*httptest.Server
	User, Token, PAT string

	mu       sync.Mutex
	issues   []*issue
	down     bool
	requests map[string]int
}

type issue struct {
	ID, Key, Type string
	Fields        map[string]any
	// moved is when a person last moved the issue, read when a GET first answered since.
	moved, read time.Time
}

// Statuses are the statuses of the project's workflow: every status reaches every other.
var Statuses = []string{"To Do", "In Progress", "Approved", "Rejected", "Done"}

// Project is the key of the fake's project.
const Project = "OPS"

// Types are the project's issue types and their fields.
var Types = map[string][]Field{
	"10001": {{ID: "summary", Name: "Summary", Type: "string", Required: true}, {ID: "description", Name: "Description", Type: "string"},
		{ID: "priority", Name: "Priority", Type: "priority", Allowed: []string{"P1", "P2", "P3"}}, {ID: "labels", Name: "Labels", Type: "array", Items: "string"},
		{ID: "customfield_10100", Name: "Change Risk", Type: "option", Allowed: []string{"Low", "Medium", "High"}}},
	"10002": {{ID: "summary", Name: "Summary", Type: "string", Required: true}, {ID: "description", Name: "Description", Type: "string"}},
}

// TypeNames names the issue types.
var TypeNames = map[string]string{"10001": "Change", "10002": "Bug"}

// Start serves a fake Jira with basic-auth user and API token, and a personal access token.
func Start() *Server {
	s := &Server{User: "deploy-bot@example.com", Token: "jira-api-token-7731", PAT: "jira-pat-5529", requests: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// SetDown makes every request answer 503, as a site under maintenance does.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// SetStatus moves an issue to a status, as a person in Jira does.
func (s *Server) SetStatus(key, st string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.find(key); is != nil {
		is.Fields["status"] = map[string]any{"name": st}
		is.moved, is.read = time.Now(), time.Time{}
	}
}

// ReadSinceMoved is when a GET first answered an issue's status as SetStatus last set it
// (zero before that).
func (s *Server) ReadSinceMoved(key string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.find(key); is != nil {
		return is.read
	}
	return time.Time{}
}

// Open creates n Change issues in To Do, as people would, and returns their keys.
func (s *Server) Open(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for range n {
		i := len(s.issues) + 1
		is := &issue{ID: fmt.Sprint(20000 + i), Key: fmt.Sprintf("%s-%d", Project, i), Type: "10001", Fields: map[string]any{
			"summary": "change", "status": map[string]any{"name": "To Do"}, "issuetype": map[string]any{"name": "Change"}}}
		s.issues = append(s.issues, is)
		keys = append(keys, is.Key)
	}
	return keys
}

// Issues returns the keys of the issues created, in order.
func (s *Server) Issues() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, is := range s.issues {
		out = append(out, is.Key)
	}
	return out
}

// Field returns an issue's field value (as Jira stores it).
func (s *Server) Field(key, id string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.find(key); is != nil {
		return is.Fields[id]
	}
	return nil
}

// Requests returns how many requests each endpoint answered ("GET issue", "POST issue", ...).
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}

func (s *Server) find(key string) *issue {
	for _, is := range s.issues {
		if is.Key == key {
			return is
		}
	}
	return nil
}

var (
	reTypes     = regexp.MustCompile(`^/rest/api/2/issue/createmeta/([^/]+)/issuetypes$`)
	reTypeMeta  = regexp.MustCompile(`^/rest/api/2/issue/createmeta/([^/]+)/issuetypes/([^/]+)$`)
	reIssue     = regexp.MustCompile(`^/rest/api/2/issue/([A-Z]+-\d+)$`)
	reEditMeta  = regexp.MustCompile(`^/rest/api/2/issue/([A-Z]+-\d+)/editmeta$`)
	reTransits  = regexp.MustCompile(`^/rest/api/2/issue/([A-Z]+-\d+)/transitions$`)
	reSearchJQL = regexp.MustCompile(`project = "([^"]+)" AND labels = "([^"]+)"`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		http.Error(w, "Jira is under maintenance", http.StatusServiceUnavailable)
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="jira"`)
		errorJSON(w, http.StatusUnauthorized, "Client must be authenticated to access this resource.")
		return
	}
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet && reTypes.MatchString(p):
		s.count("GET createmeta")
		if reTypes.FindStringSubmatch(p)[1] != Project {
			errorJSON(w, http.StatusNotFound, "No project could be found with key '"+reTypes.FindStringSubmatch(p)[1]+"'.")
			return
		}
		var values []map[string]string
		for _, id := range []string{"10001", "10002"} {
			values = append(values, map[string]string{"id": id, "name": TypeNames[id]})
		}
		writeJSON(w, http.StatusOK, map[string]any{"values": values})
	case r.Method == http.MethodGet && reTypeMeta.MatchString(p):
		s.count("GET createmeta")
		m := reTypeMeta.FindStringSubmatch(p)
		fields, ok := Types[m[2]]
		if m[1] != Project || !ok {
			errorJSON(w, http.StatusNotFound, "Issue type not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"values": metaOf(fields)})
	case r.Method == http.MethodPost && p == "/rest/api/2/issue":
		s.count("POST issue")
		s.create(w, r)
	case r.Method == http.MethodGet && reIssue.MatchString(p):
		s.count("GET issue")
		is := s.find(reIssue.FindStringSubmatch(p)[1])
		if is == nil {
			errorJSON(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
			return
		}
		if !is.moved.IsZero() && is.read.IsZero() {
			is.read = time.Now()
		}
		names := map[string]string{"status": "Status", "issuetype": "Issue Type", "project": "Project"}
		for _, f := range Types[is.Type] {
			names[f.ID] = f.Name
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": is.ID, "key": is.Key, "self": s.URL + "/rest/api/2/issue/" + is.ID, "fields": is.Fields, "names": names})
	case r.Method == http.MethodPut && reIssue.MatchString(p):
		s.count("PUT issue")
		is := s.find(reIssue.FindStringSubmatch(p)[1])
		if is == nil {
			errorJSON(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
			return
		}
		var body struct {
			Fields map[string]any `json:"fields"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			errorJSON(w, http.StatusBadRequest, "Unexpected character in the request body")
			return
		}
		if msg := checkFields(Types[is.Type], body.Fields); msg != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{}, "errors": msg})
			return
		}
		for k, v := range body.Fields {
			is.Fields[k] = v
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && reEditMeta.MatchString(p):
		s.count("GET editmeta")
		is := s.find(reEditMeta.FindStringSubmatch(p)[1])
		if is == nil {
			errorJSON(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
			return
		}
		fields := map[string]any{}
		for _, f := range metaOf(Types[is.Type]) {
			fields[f["fieldId"].(string)] = f
		}
		writeJSON(w, http.StatusOK, map[string]any{"fields": fields})
	case r.Method == http.MethodGet && reTransits.MatchString(p):
		s.count("GET transitions")
		is := s.find(reTransits.FindStringSubmatch(p)[1])
		if is == nil {
			errorJSON(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
			return
		}
		cur := is.Fields["status"].(map[string]any)["name"]
		var list []map[string]any
		for i, st := range Statuses {
			if st != cur {
				list = append(list, map[string]any{"id": fmt.Sprint(11 + i), "name": "Move to " + st, "to": map[string]any{"name": st}})
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"transitions": list})
	case r.Method == http.MethodPost && reTransits.MatchString(p):
		s.count("POST transitions")
		is := s.find(reTransits.FindStringSubmatch(p)[1])
		var body struct {
			Transition struct{ ID string } `json:"transition"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		i := 0
		fmt.Sscan(body.Transition.ID, &i)
		if is == nil || i < 11 || i-11 >= len(Statuses) {
			errorJSON(w, http.StatusBadRequest, "Transition id '"+body.Transition.ID+"' is not valid for this issue.")
			return
		}
		is.Fields["status"] = map[string]any{"name": Statuses[i-11]}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && p == "/rest/api/2/search/jql":
		s.count("GET search")
		m := reSearchJQL.FindStringSubmatch(r.URL.Query().Get("jql"))
		if m == nil {
			errorJSON(w, http.StatusBadRequest, "Error in the JQL Query")
			return
		}
		var found []map[string]string
		for _, is := range s.issues {
			labels, _ := is.Fields["labels"].([]any)
			if strings.HasPrefix(is.Key, m[1]+"-") && slices.Contains(labels, any(m[2])) {
				found = append(found, map[string]string{"key": is.Key})
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"issues": found})
	default:
		errorJSON(w, http.StatusNotFound, "null for uri: "+r.URL.String())
	}
}

func (s *Server) count(what string) { s.requests[what]++ }

func (s *Server) authorized(r *http.Request) bool {
	if user, pass, ok := r.BasicAuth(); ok {
		return user == s.User && pass == s.Token
	}
	return r.Header.Get("Authorization") == "Bearer "+s.PAT
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Fields map[string]any `json:"fields"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		errorJSON(w, http.StatusBadRequest, "Unexpected character in the request body")
		return
	}
	f := body.Fields
	project, _ := f["project"].(map[string]any)
	itype, _ := f["issuetype"].(map[string]any)
	if project["key"] != Project {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]string{"project": "valid project is required"}})
		return
	}
	typeID, _ := itype["id"].(string)
	fields, ok := Types[typeID]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]string{"issuetype": "valid issue type is required"}})
		return
	}
	delete(f, "project")
	delete(f, "issuetype")
	if msg := checkFields(fields, f); msg != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{}, "errors": msg})
		return
	}
	for _, fd := range fields {
		if _, set := f[fd.ID]; fd.Required && !set {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]string{fd.ID: fd.Name + " is required."}})
			return
		}
	}
	n := len(s.issues) + 1
	is := &issue{ID: fmt.Sprint(20000 + n), Key: fmt.Sprintf("%s-%d", Project, n), Type: typeID, Fields: f}
	f["status"] = map[string]any{"name": "To Do"}
	f["issuetype"] = map[string]any{"name": TypeNames[typeID]}
	f["project"] = map[string]any{"key": Project}
	s.issues = append(s.issues, is)
	writeJSON(w, http.StatusCreated, map[string]any{"id": is.ID, "key": is.Key, "self": s.URL + "/rest/api/2/issue/" + is.ID})
}

// checkFields answers as Jira does for fields not on the screen and values not allowed.
func checkFields(fields []Field, set map[string]any) map[string]string {
	for id, v := range set {
		i := slices.IndexFunc(fields, func(f Field) bool { return f.ID == id })
		if i < 0 {
			return map[string]string{id: fmt.Sprintf("Field '%s' cannot be set. It is not on the appropriate screen, or unknown.", id)}
		}
		fd := fields[i]
		switch fd.Type {
		case "option", "priority":
			m, _ := v.(map[string]any)
			name, _ := m["value"].(string)
			if fd.Type == "priority" {
				name, _ = m["name"].(string)
			}
			if !slices.Contains(fd.Allowed, name) {
				return map[string]string{id: fmt.Sprintf("Specify a valid value for %s", fd.Name)}
			}
		case "string":
			if _, ok := v.(string); !ok {
				return map[string]string{id: "Operation value must be a string"}
			}
		case "array":
			if _, ok := v.([]any); !ok {
				return map[string]string{id: "data was not an array"}
			}
		}
	}
	return nil
}

func metaOf(fields []Field) []map[string]any {
	var out []map[string]any
	for _, f := range fields {
		schema := map[string]any{"type": f.Type}
		if f.Items != "" {
			schema["items"] = f.Items
		}
		m := map[string]any{"fieldId": f.ID, "key": f.ID, "name": f.Name, "required": f.Required, "schema": schema}
		if len(f.Allowed) > 0 {
			var av []map[string]string
			for _, a := range f.Allowed {
				av = append(av, map[string]string{"value": a, "name": a})
			}
			m["allowedValues"] = av
		}
		out = append(out, m)
	}
	return out
}

func errorJSON(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"errorMessages": []string{msg}, "errors": map[string]string{}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
