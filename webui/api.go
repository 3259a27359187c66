package webui

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/temporalio/ui-server/v2/server/version"
)

// readAPI answers the UI's reads of the Temporal HTTP API (GET /api/v1/namespaces/...) itself
// and hands everything else to the ui-server. The ui-server builds a fresh gateway mux, with
// every route of the workflow and operator services, for each request, and indents its JSON:
// about half the CPU of a describe or a history read, and an open page makes several a second.
// Here the mux is built once and the JSON is compact; the answers are otherwise the same
// (Temporal's JSON form of the same responses, the same headers sent to the frontend, the same
// errors), compressed at gzip's fastest level. Queries (POSTs that change nothing) come here
// when they carry the page's CSRF token; writes keep the ui-server's CSRF and write-control
// checks.
type readAPI struct {
	mux  http.Handler
	next http.Handler
}

func newReadAPI(conn *grpc.ClientConn, next http.Handler) (*readAPI, error) {
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, temporalJSON{}),
		runtime.WithMetadata(func(context.Context, *http.Request) metadata.MD {
			// What the ui-server tells the frontend about its calls.
			return metadata.Pairs("client-name", "temporal-ui", "client-version", version.UIVersion)
		}),
		runtime.WithUnescapingMode(runtime.UnescapingModeAllExceptReserved),
		runtime.WithErrorHandler(apiError),
	)
	ctx := context.Background()
	if err := workflowservice.RegisterWorkflowServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := operatorservice.RegisterOperatorServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	gz, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, err
	}
	return &readAPI{mux: gz(mux), next: next}, nil
}

func (a *readAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.reads(r) {
		a.mux.ServeHTTP(w, r)
		return
	}
	a.next.ServeHTTP(w, r)
}

// reads tells the calls readAPI answers: the Temporal API's reads and workflow queries.
func (a *readAPI) reads(r *http.Request) bool {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/api/v1/namespaces/") {
		return false
	}
	switch r.Method {
	case http.MethodGet:
		return !strings.HasSuffix(p, "/history.json") // the ui-server's own raw-history download
	case http.MethodPost:
		return strings.Contains(p, "/workflows/") && strings.Contains(p, "/query/") && csrfMatches(r)
	}
	return false
}

// csrfMatches checks the double-submitted token the ui-server issues (cookie _csrf, header
// X-CSRF-Token), as its CSRF middleware does for every POST.
func csrfMatches(r *http.Request) bool {
	c, err := r.Cookie("_csrf")
	h := r.Header.Get("X-CSRF-Token")
	return err == nil && c.Value != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(h)) == 1
}

// apiError answers a failed call as the ui-server does: the gRPC status as JSON, with the
// HTTP status gRPC-gateway maps its code to.
func apiError(_ context.Context, _ *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	s := serviceerror.ToStatus(err)
	body, merr := m.Marshal(s.Proto())
	w.Header().Set("Content-Type", "application/json")
	if merr != nil {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"code": 13, "message": "failed to marshal error message"}`))
		return
	}
	w.WriteHeader(runtime.HTTPStatusFromCode(s.Code()))
	_, _ = w.Write(body)
}

// temporalJSON is Temporal's JSON form of its protos (what the UI reads), compact.
type temporalJSON struct{}

func (temporalJSON) ContentType(any) string { return "application/json" }

func (temporalJSON) Marshal(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return temporalproto.CustomJSONMarshalOptions{}.Marshal(m)
	}
	return json.Marshal(v)
}

func (temporalJSON) Unmarshal(data []byte, v any) error {
	if m, ok := v.(proto.Message); ok {
		return temporalproto.CustomJSONUnmarshalOptions{}.Unmarshal(data, m)
	}
	return json.Unmarshal(data, v)
}

func (t temporalJSON) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		return t.Unmarshal(data, v)
	})
}

func (t temporalJSON) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		data, err := t.Marshal(v)
		if err == nil {
			_, err = w.Write(data)
		}
		return err
	})
}
