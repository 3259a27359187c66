// Package awsfake is a test double for the AWS services no emulator can run here: STS
// (AssumeRole, GetCallerIdentity; the query protocol with XML answers), Secrets Manager
// (GetSecretValue; JSON 1.1 selected by X-Amz-Target), EC2's DescribeInstances (ec2.go), Lambda (functions, versions and tags;
// REST-JSON, lambda.go), and ECS with Application Auto Scaling (task definitions, services
// whose deployments roll, tasks, scalable targets; JSON 1.1, ecs.go), and ECR's
// GetAuthorizationToken (a registry of the test's choosing), and EC2 Auto Scaling groups with
// their EC2 launch templates (autoscaling.go). It answers the requests aws-sdk-go-v2
// sends, checks that they are SigV4-signed, and records which access key signed each call, so
// tests see which credentials a connector produced.
package awsfake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Server is a running fake.
type Server struct {
	URL string

	mu      sync.Mutex
	srv     *httptest.Server
	secrets map[string]string
	roles   map[string]Role
	calls   []Call

	functions  map[string]*lambdaFn
	failUpdate map[string]string

	services  map[string]*ecsService
	taskDefs  map[string]map[string]any
	revisions map[string]int
	tasks     map[string]*ecsTask
	svcTasks  map[string]map[string]any // services' tasks, as ListTasks last named them
	taskSeq   int
	targets   map[string]map[string]any
	policies  map[string]map[string]map[string]any
	denied    map[string]bool
	// registry is the proxyEndpoint ECR's GetAuthorizationToken hands out (SetRegistry).
	registry  string
	listeners map[string]string            // listener ARN → target group
	rules     map[string]string            // rule ARN → target group (the heaviest, when weighted)
	weights   map[string]map[string]int    // rule ARN → target group → weight, for weighted rules
	elbTags   map[string]map[string]string // load balancer, listener or rule ARN → tags
	instances []Instance                   // EC2
	images    []Image                      // EC2 AMIs
	templates map[string]*launchTemplate   // EC2 launch templates by name
	groups    map[string]*asGroup          // Auto Scaling groups by name
	// failRefresh names the groups whose instance refreshes fail (FailInstanceRefresh).
	failRefresh                          map[string]bool
	instanceSeq, refreshSeq, templateSeq int
	// S3Get reads the zip a Lambda function's code names in S3 (nil: the code is the reference).
	S3Get func(bucket, key string) ([]byte, error)
}

// Role is an assumable role: the external ID it demands ("" for none) and the keys it hands out.
type Role struct {
	ExternalID             string
	AccessKeyID, SecretKey string
	AllowedCallers         []string // access key ids allowed to assume it; empty: any
	DenyWith               string   // an error code every AssumeRole of it fails with
}

// Call is one request the fake answered.
type Call struct {
	Service, Action string
	AccessKeyID     string // from the SigV4 Authorization header
	Params          map[string]string
}

// Start starts a fake on loopback.
func Start() *Server {
	s := &Server{secrets: map[string]string{}, roles: map[string]Role{}, functions: map[string]*lambdaFn{}, failUpdate: map[string]string{},
		services: map[string]*ecsService{}, taskDefs: map[string]map[string]any{}, revisions: map[string]int{}, tasks: map[string]*ecsTask{}, svcTasks: map[string]map[string]any{},
		targets: map[string]map[string]any{}, policies: map[string]map[string]map[string]any{}, denied: map[string]bool{},
		listeners: map[string]string{}, rules: map[string]string{}, weights: map[string]map[string]int{}, elbTags: map[string]map[string]string{},
		templates: map[string]*launchTemplate{}, groups: map[string]*asGroup{}, failRefresh: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the fake.
func (s *Server) Close() { s.srv.Close() }

// SetSecret stores a Secrets Manager secret.
func (s *Server) SetSecret(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[name] = value
}

// SetRegistry makes ECR's GetAuthorizationToken hand out endpoint (https://HOST or
// http://HOST for a plain-HTTP registry) as the account's registry.
func (s *Server) SetRegistry(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registry = endpoint
}

// AddRole makes a role assumable.
func (s *Server) AddRole(arn string, r Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[arn] = r
}

// Deny makes every call of a JSON-protocol action ("GetSecretValue", "UpdateService") fail
// with AccessDeniedException, as a missing IAM permission does.
func (s *Server) Deny(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[action] = true
}

// Calls returns the requests answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

var credRe = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_code/") {
		s.serveCode(w, r)
		return
	}
	m := credRe.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		jsonErr(w, http.StatusForbidden, "MissingAuthenticationTokenException", "Request is missing a valid SigV4 Authentication header")
		return
	}
	key, service := m[1], m[3]
	body, _ := io.ReadAll(r.Body)
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.json(w, key, target, body)
		return
	}
	if service == "lambda" {
		s.lambda(w, r, key, body)
		return
	}
	if service == "sts" {
		form, _ := url.ParseQuery(string(body))
		s.sts(w, key, form)
		return
	}
	if service == "ec2" {
		form, _ := url.ParseQuery(string(body))
		s.ec2(w, key, form)
		return
	}
	if service == "autoscaling" {
		form, _ := url.ParseQuery(string(body))
		s.autoScaling(w, key, form)
		return
	}
	if service == "elasticloadbalancing" {
		form, _ := url.ParseQuery(string(body))
		s.elb(w, key, form)
		return
	}
	jsonErr(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not serve "+service+" "+r.Method+" "+r.URL.Path)
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *Server) json(w http.ResponseWriter, key, target string, body []byte) {
	service, action, _ := strings.Cut(target, ".")
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	params := map[string]string{}
	for k, v := range in {
		params[k] = fmt.Sprint(v)
	}
	s.record(Call{Service: service, Action: action, AccessKeyID: key, Params: params})
	s.mu.Lock()
	denied := s.denied[action]
	s.mu.Unlock()
	if denied {
		jsonErr(w, http.StatusBadRequest, "AccessDeniedException", "User: arn:aws:iam::123456789012:user/"+key+" is not authorized to perform: "+action)
		return
	}
	switch service {
	case "AmazonEC2ContainerServiceV20141113":
		s.ecs(w, action, in)
		return
	case "AnyScaleFrontendService":
		s.autoscaling(w, action, in)
		return
	}
	switch target {
	case "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken":
		s.mu.Lock()
		endpoint := s.registry
		s.mu.Unlock()
		if endpoint == "" {
			endpoint = "https://123456789012.dkr.ecr.us-east-1.amazonaws.com"
		}
		token := base64.StdEncoding.EncodeToString([]byte("AWS:ecr-token-for-" + key))
		writeJSON(w, map[string]any{"authorizationData": []any{map[string]any{"authorizationToken": token,
			"expiresAt": float64(time.Now().Add(12 * time.Hour).Unix()), "proxyEndpoint": endpoint}}})
	case "secretsmanager.GetSecretValue":
		id := params["SecretId"]
		s.mu.Lock()
		v, ok := s.secrets[id]
		s.mu.Unlock()
		if !ok {
			jsonErr(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		writeJSON(w, map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + id + "-AbCdEf",
			"Name": id, "SecretString": v, "VersionId": "v1", "VersionStages": []string{"AWSCURRENT"}, "CreatedDate": float64(time.Now().Unix())})
	default:
		jsonErr(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not serve "+target)
	}
}

func (s *Server) sts(w http.ResponseWriter, key string, form url.Values) {
	params := map[string]string{}
	for k := range form {
		params[k] = form.Get(k)
	}
	action := form.Get("Action")
	s.record(Call{Service: "sts", Action: action, AccessKeyID: key, Params: params})
	switch action {
	case "GetCallerIdentity":
		writeXML(w, http.StatusOK, getCallerIdentity{Result: identity{Account: "123456789012", Arn: "arn:aws:iam::123456789012:user/" + key, UserID: key}})
	case "AssumeRole":
		arn := form.Get("RoleArn")
		s.mu.Lock()
		role, ok := s.roles[arn]
		s.mu.Unlock()
		switch {
		case !ok:
			stsErr(w, http.StatusForbidden, "AccessDenied", "User: "+key+" is not authorized to perform: sts:AssumeRole on resource: "+arn)
		case role.DenyWith != "":
			stsErr(w, http.StatusForbidden, role.DenyWith, "denied by the test for "+arn)
		case role.ExternalID != "" && form.Get("ExternalId") != role.ExternalID:
			stsErr(w, http.StatusForbidden, "AccessDenied", "User: "+key+" is not authorized to perform: sts:AssumeRole on resource: "+arn+" (external id)")
		case len(role.AllowedCallers) > 0 && !contains(role.AllowedCallers, key):
			stsErr(w, http.StatusForbidden, "AccessDenied", "User: "+key+" is not authorized to perform: sts:AssumeRole on resource: "+arn)
		default:
			var out assumeRole
			out.Result.Credentials = creds{AccessKeyID: role.AccessKeyID, SecretAccessKey: role.SecretKey, SessionToken: "session-" + role.AccessKeyID,
				Expiration: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
			out.Result.User = assumedUser{Arn: arn + "/" + form.Get("RoleSessionName"), ID: "AROA:" + form.Get("RoleSessionName")}
			writeXML(w, http.StatusOK, out)
		}
	default:
		stsErr(w, http.StatusBadRequest, "InvalidAction", "the fake does not serve "+action)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type identity struct {
	Account string `xml:"Account"`
	Arn     string `xml:"Arn"`
	UserID  string `xml:"UserId"`
}

type getCallerIdentity struct {
	XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ GetCallerIdentityResponse"`
	Result  identity `xml:"GetCallerIdentityResult"`
}

type creds struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type assumedUser struct {
	Arn string `xml:"Arn"`
	ID  string `xml:"AssumedRoleId"`
}

type assumeRole struct {
	XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleResponse"`
	Result  struct {
		Credentials creds       `xml:"Credentials"`
		User        assumedUser `xml:"AssumedRoleUser"`
	} `xml:"AssumeRoleResult"`
}

type stsError struct {
	XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ ErrorResponse"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

func stsErr(w http.ResponseWriter, status int, code, msg string) {
	var e stsError
	e.Error.Type, e.Error.Code, e.Error.Message, e.RequestID = "Sender", code, msg, "fake-request"
	writeXML(w, status, e)
}

func writeXML(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func jsonErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

// Secrets is a secret resolver over a map, for tests of steps that sign with a connector's keys.
type Secrets map[string]string

// Resolve implements secrets.Resolver.
func (s Secrets) Resolve(_ context.Context, id string) (string, error) {
	if v, ok := s[id]; ok {
		return v, nil
	}
	return "", fmt.Errorf("secret %s is not defined", id)
}
