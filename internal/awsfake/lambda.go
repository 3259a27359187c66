package awsfake

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The Lambda part of the fake speaks Lambda's REST-JSON protocol. Functions keep their state
// across calls as Lambda does: a create or update leaves the function Pending (State) or
// InProgress (LastUpdateStatus) for a few reads before it is Active and Successful, a publish
// during an update is refused, published versions are snapshots of $LATEST, and a version's
// code can be downloaded from the Location URL GetFunction returns.

// lambdaFn is one function: $LATEST, the published versions, and tags.
type lambdaFn struct {
	latest   lambdaVersion
	versions []lambdaVersion
	tags     map[string]string
	aliases  map[string]map[string]any // name -> the alias as GetAlias answers it
	settling int                       // reads left before $LATEST's create or update has finished
}

// lambdaVersion is a configuration with its code.
type lambdaVersion struct {
	Config map[string]any
	Code   []byte
	Image  string
}

// LambdaFunction is a function's state for tests.
type LambdaFunction struct {
	Config   map[string]any // $LATEST's configuration, as GetFunctionConfiguration answers
	Code     []byte         // $LATEST's code (the bytes of the zip)
	Image    string
	Versions []string
	Tags     map[string]string
	// Aliases maps each alias to its version and the weights of its additional versions.
	Aliases map[string]Alias
}

// Alias is where an alias routes: its version, and each additional version's weight.
type Alias struct {
	Version string
	Weights map[string]float64
}

// Function returns a function's state, or false when there is none.
func (s *Server) Function(name string) (LambdaFunction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.functions[name]
	if !ok {
		return LambdaFunction{}, false
	}
	out := LambdaFunction{Config: f.latest.Config, Code: f.latest.Code, Image: f.latest.Image, Tags: map[string]string{}}
	for _, v := range f.versions {
		out.Versions = append(out.Versions, fmt.Sprint(v.Config["Version"]))
	}
	for k, v := range f.tags {
		out.Tags[k] = v
	}
	out.Aliases = map[string]Alias{}
	for name, a := range f.aliases {
		al := Alias{Version: fmt.Sprint(a["FunctionVersion"]), Weights: map[string]float64{}}
		if rc, ok := a["RoutingConfig"].(map[string]any); ok {
			w, _ := rc["AdditionalVersionWeights"].(map[string]any)
			for v, x := range w {
				al.Weights[v], _ = x.(float64)
			}
		}
		out.Aliases[name] = al
	}
	return out, true
}

// FailNextUpdate makes the next code or configuration update of function name fail, as a
// function whose new code does not start does.
func (s *Server) FailNextUpdate(name, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failUpdate[name] = reason
}

func (s *Server) lambda(w http.ResponseWriter, r *http.Request, key string, body []byte) {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		parts[i], _ = url.PathUnescape(p)
	}
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	qualifier := r.URL.Query().Get("Qualifier")
	action := r.Method + " " + strings.Join(parts, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	record := func(a string) {
		params := map[string]string{}
		for k, v := range in {
			params[k] = fmt.Sprint(v)
		}
		s.calls = append(s.calls, Call{Service: "lambda", Action: a, AccessKeyID: key, Params: params})
	}
	switch {
	case len(parts) == 2 && parts[1] == "functions" && r.Method == http.MethodPost:
		record("CreateFunction")
		s.createFunction(w, r, in)
	case len(parts) >= 3 && parts[1] == "functions":
		name := parts[2]
		f, ok := s.functions[name]
		if !ok {
			record(action)
			lambdaErr(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: arn:aws:lambda:us-east-1:123456789012:function:"+name)
			return
		}
		rest := strings.Join(parts[3:], "/")
		switch {
		case rest == "" && r.Method == http.MethodGet:
			record("GetFunction")
			v, ok := f.version(qualifier)
			if !ok {
				lambdaErr(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name+":"+qualifier)
				return
			}
			s.tick(f)
			code := map[string]any{"RepositoryType": "S3", "Location": s.URL + "/_code/" + name + "/" + fmt.Sprint(v.Config["Version"])}
			if v.Image != "" {
				code = map[string]any{"RepositoryType": "ECR", "ImageUri": v.Image}
			}
			writeJSON(w, map[string]any{"Configuration": s.state(f, v), "Code": code, "Tags": f.tags})
		case rest == "" && r.Method == http.MethodDelete:
			record("DeleteFunction")
			delete(s.functions, name)
			w.WriteHeader(http.StatusNoContent)
		case rest == "configuration" && r.Method == http.MethodGet:
			record("GetFunctionConfiguration")
			v, ok := f.version(qualifier)
			if !ok {
				lambdaErr(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name+":"+qualifier)
				return
			}
			st := s.state(f, v)
			s.tick(f)
			writeJSON(w, st)
		case rest == "code" && r.Method == http.MethodPut:
			record("UpdateFunctionCode")
			if f.settling > 0 {
				lambdaErr(w, http.StatusConflict, "ResourceConflictException", "The operation cannot be performed at this time. An update is in progress for resource: "+name)
				return
			}
			code, image, err := s.codeOf(in)
			if err != nil {
				lambdaErr(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
				return
			}
			f.latest.Code, f.latest.Image = code, image
			f.latest.Config["CodeSha256"] = sha(code, image)
			f.latest.Config["CodeSize"] = len(code)
			s.startUpdate(name, f)
			writeJSON(w, s.state(f, f.latest))
		case rest == "configuration" && r.Method == http.MethodPut:
			record("UpdateFunctionConfiguration")
			if f.settling > 0 {
				lambdaErr(w, http.StatusConflict, "ResourceConflictException", "The operation cannot be performed at this time. An update is in progress for resource: "+name)
				return
			}
			for k, v := range in {
				if k != "FunctionName" {
					f.latest.Config[k] = v
				}
			}
			if l, ok := in["Layers"].([]any); ok {
				var layers []any
				for _, a := range l {
					layers = append(layers, map[string]any{"Arn": a})
				}
				f.latest.Config["Layers"] = layers
			}
			s.startUpdate(name, f)
			writeJSON(w, s.state(f, f.latest))
		case rest == "versions" && r.Method == http.MethodPost:
			record("PublishVersion")
			if f.settling > 0 {
				lambdaErr(w, http.StatusConflict, "ResourceConflictException", "The operation cannot be performed at this time. An update is in progress for resource: "+name)
				return
			}
			v := f.publish(in["Description"])
			writeJSON(w, s.state(f, v))
		case rest == "aliases" && r.Method == http.MethodPost:
			record("CreateAlias")
			alias, _ := in["Name"].(string)
			if _, ok := f.aliases[alias]; ok {
				lambdaErr(w, http.StatusConflict, "ResourceConflictException", "Alias already exists: "+alias)
				return
			}
			a, msg := f.alias(alias, in, nil)
			if msg != "" {
				lambdaErr(w, http.StatusBadRequest, "InvalidParameterValueException", msg)
				return
			}
			f.aliases[alias] = a
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(a)
		case strings.HasPrefix(rest, "aliases/"):
			alias := strings.TrimPrefix(rest, "aliases/")
			cur, ok := f.aliases[alias]
			if !ok {
				record(map[string]string{http.MethodGet: "GetAlias", http.MethodPut: "UpdateAlias", http.MethodDelete: "DeleteAlias"}[r.Method])
				lambdaErr(w, http.StatusNotFound, "ResourceNotFoundException", "Alias not found: arn:aws:lambda:us-east-1:123456789012:function:"+name+":"+alias)
				return
			}
			switch r.Method {
			case http.MethodGet:
				record("GetAlias")
				writeJSON(w, cur)
			case http.MethodPut:
				record("UpdateAlias")
				a, msg := f.alias(alias, in, cur)
				if msg != "" {
					lambdaErr(w, http.StatusBadRequest, "InvalidParameterValueException", msg)
					return
				}
				f.aliases[alias] = a
				writeJSON(w, a)
			case http.MethodDelete:
				record("DeleteAlias")
				delete(f.aliases, alias)
				w.WriteHeader(http.StatusNoContent)
			}
		case rest == "versions" && r.Method == http.MethodGet:
			record("ListVersionsByFunction")
			list := []any{s.state(f, f.latest)}
			for _, v := range f.versions {
				list = append(list, s.state(f, v))
			}
			writeJSON(w, map[string]any{"Versions": list})
		default:
			record(action)
			lambdaErr(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not serve "+action)
		}
	case len(parts) == 3 && parts[1] == "tags" && r.Method == http.MethodPost:
		record("TagResource")
		arn := parts[2]
		name := arn[strings.LastIndex(arn, ":")+1:]
		f, ok := s.functions[name]
		if !ok {
			lambdaErr(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+arn)
			return
		}
		tags, _ := in["Tags"].(map[string]any)
		for k, v := range tags {
			f.tags[k] = fmt.Sprint(v)
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		record(action)
		lambdaErr(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not serve "+action)
	}
}

func (s *Server) createFunction(w http.ResponseWriter, r *http.Request, in map[string]any) {
	name, _ := in["FunctionName"].(string)
	if _, ok := s.functions[name]; ok {
		lambdaErr(w, http.StatusConflict, "ResourceConflictException", "Function already exist: "+name)
		return
	}
	for _, k := range []string{"FunctionName", "Role", "Code"} {
		if in[k] == nil {
			lambdaErr(w, http.StatusBadRequest, "InvalidParameterValueException", k+" is required")
			return
		}
	}
	codeIn, _ := in["Code"].(map[string]any)
	code, image, err := s.codeOf(codeIn)
	if err != nil {
		lambdaErr(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
		return
	}
	cfg := map[string]any{}
	for k, v := range in {
		switch k {
		case "Code", "Publish", "Tags":
		default:
			cfg[k] = v
		}
	}
	if l, ok := in["Layers"].([]any); ok {
		var layers []any
		for _, a := range l {
			layers = append(layers, map[string]any{"Arn": a})
		}
		cfg["Layers"] = layers
	}
	cfg["FunctionArn"] = "arn:aws:lambda:us-east-1:123456789012:function:" + name
	cfg["Version"] = "$LATEST"
	cfg["CodeSha256"], cfg["CodeSize"] = sha(code, image), len(code)
	if cfg["MemorySize"] == nil {
		cfg["MemorySize"] = 128
	}
	if cfg["Timeout"] == nil {
		cfg["Timeout"] = 3
	}
	f := &lambdaFn{latest: lambdaVersion{Config: cfg, Code: code, Image: image}, tags: map[string]string{}, aliases: map[string]map[string]any{}, settling: 2}
	if tags, ok := in["Tags"].(map[string]any); ok {
		for k, v := range tags {
			f.tags[k] = fmt.Sprint(v)
		}
	}
	s.functions[name] = f
	out := f.latest
	if in["Publish"] == true {
		// Lambda publishes version 1 once the function is created.
		out = f.publish(nil)
	}
	writeJSON(w, s.state(f, out))
}

// codeOf reads a Code (or UpdateFunctionCode) object: a zip from S3 (through S3Get), a zip
// uploaded whole, or an image.
func (s *Server) codeOf(in map[string]any) ([]byte, string, error) {
	if img, _ := in["ImageUri"].(string); img != "" {
		return nil, img, nil
	}
	if z, _ := in["ZipFile"].(string); z != "" {
		b, err := base64.StdEncoding.DecodeString(z)
		return b, "", err
	}
	bucket, _ := in["S3Bucket"].(string)
	key, _ := in["S3Key"].(string)
	if bucket == "" || key == "" {
		return nil, "", fmt.Errorf("give ZipFile, S3Bucket and S3Key, or ImageUri")
	}
	if s.S3Get == nil {
		return []byte("s3://" + bucket + "/" + key), "", nil
	}
	s.mu.Unlock() // S3Get may be slow; the handler holds the lock
	b, err := s.S3Get(bucket, key)
	s.mu.Lock()
	if err != nil {
		return nil, "", fmt.Errorf("Error occurred while GetObject. S3 Error Code: NoSuchKey. S3 Error Message: %v", err)
	}
	return b, "", nil
}

func (s *Server) startUpdate(name string, f *lambdaFn) {
	f.settling = 2
	if reason, ok := s.failUpdate[name]; ok {
		delete(s.failUpdate, name)
		f.latest.Config["LastUpdateStatus"] = "Failed"
		f.latest.Config["LastUpdateStatusReason"] = reason
		f.latest.Config["LastUpdateStatusReasonCode"] = "InvalidImage"
		f.settling = -1
	}
}

// tick counts a read of a settling function.
func (s *Server) tick(f *lambdaFn) {
	if f.settling > 0 {
		f.settling--
	}
}

// state is a version's configuration with the function's current State and LastUpdateStatus.
func (s *Server) state(f *lambdaFn, v lambdaVersion) map[string]any {
	out := map[string]any{}
	for k, x := range v.Config {
		out[k] = x
	}
	out["State"], out["LastUpdateStatus"] = "Active", "Successful"
	if out["Version"] == "$LATEST" {
		switch {
		case f.settling == -1:
			out["LastUpdateStatus"] = v.Config["LastUpdateStatus"]
		case f.settling > 0 && len(f.versions) == 0:
			out["State"], out["LastUpdateStatus"] = "Pending", "InProgress"
		case f.settling > 0:
			out["LastUpdateStatus"] = "InProgress"
		}
	}
	return out
}

func (f *lambdaFn) version(q string) (lambdaVersion, bool) {
	if q == "" || q == "$LATEST" {
		return f.latest, true
	}
	for _, v := range f.versions {
		if fmt.Sprint(v.Config["Version"]) == q {
			return v, true
		}
	}
	return lambdaVersion{}, false
}

// alias validates a CreateAlias or UpdateAlias request (over cur, for an update) as Lambda
// does: the version must be published, the weights between 0 and 1 and for another published
// version. It returns the alias, or the error message.
func (f *lambdaFn) alias(name string, in, cur map[string]any) (map[string]any, string) {
	a := map[string]any{}
	for k, v := range cur {
		a[k] = v
	}
	a["Name"] = name
	a["AliasArn"] = fmt.Sprint(f.latest.Config["FunctionArn"]) + ":" + name
	if v, ok := in["FunctionVersion"].(string); ok {
		a["FunctionVersion"] = v
	}
	if d, ok := in["Description"].(string); ok {
		a["Description"] = d
	}
	if rc, ok := in["RoutingConfig"]; ok {
		a["RoutingConfig"] = rc
	}
	version := fmt.Sprint(a["FunctionVersion"])
	if _, ok := f.version(version); !ok || version == "" {
		return nil, "1 validation error detected: Value '" + version + "' at 'functionVersion' failed to satisfy constraint: a published version of the function"
	}
	rc, _ := a["RoutingConfig"].(map[string]any)
	weights, _ := rc["AdditionalVersionWeights"].(map[string]any)
	if len(weights) > 1 {
		return nil, "RoutingConfig may list one additional version"
	}
	for v, x := range weights {
		w, _ := x.(float64)
		if _, ok := f.version(v); !ok || v == "$LATEST" {
			return nil, "the additional version " + v + " is not a published version of the function"
		}
		if v == version {
			return nil, "Invalid function version " + v + ". Function version " + v + " is already included in routing configuration."
		}
		if w < 0 || w > 1 {
			return nil, fmt.Sprintf("the weight %v of version %s is not between 0.0 and 1.0", w, v)
		}
	}
	if len(weights) == 0 {
		delete(a, "RoutingConfig")
	}
	return a, ""
}

// publish publishes $LATEST as a new version, with the request's description when it has one.
func (f *lambdaFn) publish(desc any) lambdaVersion {
	cfg := map[string]any{}
	for k, v := range f.latest.Config {
		cfg[k] = v
	}
	if d, ok := desc.(string); ok && d != "" {
		cfg["Description"] = d
	}
	n := len(f.versions) + 1
	cfg["Version"] = strconv.Itoa(n)
	cfg["FunctionArn"] = fmt.Sprint(f.latest.Config["FunctionArn"]) + ":" + strconv.Itoa(n)
	v := lambdaVersion{Config: cfg, Code: f.latest.Code, Image: f.latest.Image}
	f.versions = append(f.versions, v)
	return v
}

// serveCode serves a version's zip at its Location URL (unsigned, as a presigned URL is).
func (s *Server) serveCode(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/_code/"), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(parts) == 2 {
		if f, ok := s.functions[parts[0]]; ok {
			if v, ok := f.version(parts[1]); ok {
				_, _ = w.Write(v.Code)
				return
			}
		}
	}
	http.NotFound(w, r)
}

func sha(code []byte, image string) string {
	h := sha256.Sum256(append(code, image...))
	return base64.StdEncoding.EncodeToString(h[:])
}

func lambdaErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "Message": msg})
}
