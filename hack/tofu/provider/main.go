// Command terraform-provider-gantry is a provider for the Terraform steps' tests: it is built
// from the Go module proxy into a filesystem mirror (hack/tofu/provider.sh), as a worker with
// no registry in reach installs providers. Its one resource, gantry_file, writes a file, so a
// test sees what an apply, a rollback or a destroy did.
package main

import (
	"context"
	"log"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func main() {
	err := providerserver.Serve(context.Background(), func() provider.Provider { return &gantryProvider{} },
		providerserver.ServeOpts{Address: "registry.opentofu.org/gantry/gantry"})
	if err != nil {
		log.Fatal(err)
	}
}

type gantryProvider struct{}

func (p *gantryProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "gantry"
}

func (p *gantryProvider) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}

func (p *gantryProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (p *gantryProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return &fileResource{} }}
}

func (p *gantryProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }

type fileResource struct{}

type fileModel struct {
	Path    types.String `tfsdk:"path"`
	Content types.String `tfsdk:"content"`
	ID      types.String `tfsdk:"id"`
}

func (r *fileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_file"
}

func (r *fileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{
		"path":    schema.StringAttribute{Required: true, PlanModifiers: replace},
		"content": schema.StringAttribute{Required: true},
		"id":      schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
	}}
}

func (r *fileResource) write(m *fileModel) error {
	p := m.Path.ValueString()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	m.ID = types.StringValue(p)
	return os.WriteFile(p, []byte(m.Content.ValueString()), 0o644)
}

func (r *fileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if err := r.write(&m); err != nil {
		resp.Diagnostics.AddError("write file", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *fileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	b, err := os.ReadFile(m.Path.ValueString())
	if os.IsNotExist(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("read file", err.Error())
		return
	}
	m.Content = types.StringValue(string(b))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *fileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if err := r.write(&m); err != nil {
		resp.Diagnostics.AddError("write file", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *fileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if err := os.Remove(m.Path.ValueString()); err != nil && !os.IsNotExist(err) {
		resp.Diagnostics.AddError("remove file", err.Error())
	}
}
