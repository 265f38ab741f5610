//! The `#[tool]` attribute of `corral-guest`.
//!
//! It turns a plain function over a typed argument struct into a tool descriptor
//! that `corral_guest::plugin!` can list. Every misuse (a wrong signature, an
//! unknown option, an invalid name) is a compile error spanned on the offending
//! code. Use it through `corral_guest::tool`, never from this crate directly.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, FnArg, ItemFn, Lit, LitStr, Meta, ReturnType, parse_macro_input};

/// Registers a function as a corral tool. See `corral_guest::tool` for the
/// documentation shown to users.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func = parse_macro_input!(item as ItemFn);
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    let parsed =
        syn::parse::Parser::parse(parser, attr).and_then(|()| expand(options, func.clone()));
    match parsed {
        Ok(tokens) => tokens.into(),
        // Keep the function so the only error is ours, not a cascade of
        // "unused" and "cannot find" follow-ups.
        Err(err) => {
            let error = err.to_compile_error();
            quote!(#error #func).into()
        }
    }
}

/// The options of `#[tool(...)]`, each optional.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    category: Option<LitStr>,
    version: Option<LitStr>,
    keywords: Vec<LitStr>,
    idempotent: bool,
    sequential: bool,
    requires_approval: bool,
    latency: Option<TokenStream2>,
    return_behavior: Option<TokenStream2>,
    priority: Option<u8>,
    depends_on: Vec<LitStr>,
    output_schema: bool,
    max_attempts: Option<syn::LitInt>,
    cache_ttl_ms: Option<syn::LitInt>,
    requests_per_second: Option<syn::LitInt>,
}

impl Options {
    fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => {
                let lit: LitStr = meta.value()?.parse()?;
                check_name(&lit.value(), lit.span())?;
                self.name = Some(lit);
            }
            "description" => {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "the description must not be empty: say what the tool does and when to use it",
                    ));
                }
                self.description = Some(lit);
            }
            "category" => self.category = Some(meta.value()?.parse()?),
            "version" => self.version = Some(meta.value()?.parse()?),
            "keywords" => {
                // `keywords("a", "b")`: a parenthesized list of string literals.
                let content;
                syn::parenthesized!(content in meta.input);
                let list = content
                    .parse_terminated(<LitStr as syn::parse::Parse>::parse, syn::Token![,])?;
                self.keywords = list.into_iter().collect();
            }
            "idempotent" => self.idempotent = true,
            "sequential" => self.sequential = true,
            "requires_approval" => self.requires_approval = true,
            "latency" => {
                let lit: LitStr = meta.value()?.parse()?;
                let variant = match lit.value().as_str() {
                    "fast" => quote!(Fast),
                    "medium" => quote!(Medium),
                    "slow" => quote!(Slow),
                    _ => {
                        return Err(syn::Error::new(
                            lit.span(),
                            "latency must be \"fast\", \"medium\" or \"slow\"",
                        ));
                    }
                };
                self.latency = Some(quote!(::corral_guest::Latency::#variant));
            }
            "return_behavior" => {
                let lit: LitStr = meta.value()?.parse()?;
                let variant = match lit.value().as_str() {
                    "to_llm" => quote!(ToLlm),
                    "immediate" => quote!(Immediate),
                    _ => {
                        return Err(syn::Error::new(
                            lit.span(),
                            "return_behavior must be \"to_llm\" or \"immediate\"",
                        ));
                    }
                };
                self.return_behavior = Some(quote!(::corral_guest::ReturnBehavior::#variant));
            }
            "priority" => {
                let lit: syn::LitInt = meta.value()?.parse()?;
                let value: u8 = lit
                    .base10_parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| syn::Error::new(lit.span(), "priority must be 0 to 100"))?;
                self.priority = Some(value);
            }
            "depends_on" => {
                // `depends_on("a", "b")`: the tools this one consumes.
                let content;
                syn::parenthesized!(content in meta.input);
                let list = content
                    .parse_terminated(<LitStr as syn::parse::Parse>::parse, syn::Token![,])?;
                for dep in &list {
                    check_name(&dep.value(), dep.span())?;
                }
                self.depends_on = list.into_iter().collect();
            }
            "output_schema" => self.output_schema = true,
            "max_attempts" => self.max_attempts = Some(meta.value()?.parse()?),
            "cache_ttl_ms" => self.cache_ttl_ms = Some(meta.value()?.parse()?),
            "requests_per_second" => self.requests_per_second = Some(meta.value()?.parse()?),
            _ => {
                return Err(meta.error(
                    "unknown #[tool] option; expected one of: name, description, category, \
                     version, keywords, idempotent, sequential, requires_approval, latency, \
                     return_behavior, priority, depends_on, output_schema, max_attempts, \
                     cache_ttl_ms, requests_per_second",
                ));
            }
        }
        Ok(())
    }
}

/// Applies the host's name rule (`corral_names::check_name`, the one
/// source) at compile time.
fn check_name(name: &str, span: Span) -> syn::Result<()> {
    corral_names::check_name(name)
        .map_err(|problem| syn::Error::new(span, format!("invalid tool name `{name}`: {problem}")))
}

/// `T` of a `-> Result<T, E>` return type.
fn result_ok_type(output: &ReturnType) -> Option<syn::Type> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    let syn::Type::Path(path) = ty.as_ref() else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(ty) => Some(ty.clone()),
        _ => None,
    }
}

/// Joins the function's `///` lines into the tool description.
fn doc_comment(func: &ItemFn) -> String {
    let mut lines = Vec::new();
    for attr in &func.attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            lines.push(s.value().trim().to_string());
        }
    }
    // Paragraphs become single lines: the model reads prose, not rustdoc layout.
    let mut out = String::new();
    for line in lines {
        if line.is_empty() {
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push_str("\n\n");
            }
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(&line);
        }
    }
    out.trim().to_string()
}

fn expand(options: Options, func: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &func.sig;
    if let Some(token) = &sig.asyncness {
        return Err(syn::Error::new(
            token.span(),
            "a tool function cannot be async: the call runs to completion inside the sandbox",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a tool function cannot be generic: its argument type decides its JSON Schema",
        ));
    }
    let mut inputs = sig.inputs.iter();
    let args_ty = match inputs.next() {
        Some(FnArg::Typed(pat)) => pat.ty.clone(),
        Some(FnArg::Receiver(recv)) => {
            return Err(syn::Error::new(
                recv.span(),
                "a tool function cannot take `self`: write a free function",
            ));
        }
        None => {
            return Err(syn::Error::new(
                sig.paren_token.span.join(),
                "a tool function takes its arguments as one struct: \
                 `fn my_tool(args: MyArgs) -> Result<Output, ToolError>` \
                 where MyArgs derives Deserialize and JsonSchema",
            ));
        }
    };
    if let syn::Type::Reference(r) = args_ty.as_ref() {
        return Err(syn::Error::new(
            r.span(),
            "take the argument struct by value, not by reference",
        ));
    }
    let takes_context = match inputs.next() {
        None => false,
        Some(FnArg::Typed(pat)) => {
            let is_context_ref = matches!(pat.ty.as_ref(), syn::Type::Reference(r)
                if matches!(r.elem.as_ref(), syn::Type::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "Context")));
            if !is_context_ref {
                return Err(syn::Error::new(
                    pat.ty.span(),
                    "the optional second parameter must be `&corral_guest::Context`",
                ));
            }
            true
        }
        Some(other) => {
            return Err(syn::Error::new(
                other.span(),
                "the optional second parameter must be `&corral_guest::Context`",
            ));
        }
    };
    if let Some(extra) = inputs.next() {
        return Err(syn::Error::new(
            extra.span(),
            "a tool function takes at most two parameters: the argument struct and `&Context`",
        ));
    }
    if let ReturnType::Default = sig.output {
        return Err(syn::Error::new(
            sig.ident.span(),
            "a tool function must return `Result<T, E>` where T: Serialize (or a ToolOutput) and E: Into<ToolError>",
        ));
    }

    let ident = &sig.ident;
    let vis = &func.vis;
    let name = match &options.name {
        Some(lit) => lit.value(),
        None => {
            let name = ident.to_string();
            check_name(&name, ident.span())?;
            name
        }
    };
    let description = match &options.description {
        Some(lit) => lit.value(),
        None => {
            let doc = doc_comment(&func);
            if doc.is_empty() {
                return Err(syn::Error::new(
                    ident.span(),
                    "add a `///` doc comment (or `description = \"...\"`): it becomes the \
                     description the model reads to decide when to call this tool",
                ));
            }
            doc
        }
    };
    let category = options.category.map(|c| c.value()).unwrap_or_default();
    let version = match options.version {
        Some(v) => quote!(#v),
        None => quote!(::core::env!("CARGO_PKG_VERSION")),
    };
    let keywords = options.keywords.iter();
    let idempotent = options.idempotent;
    let parallelizable = !options.sequential;
    let requires_approval = options.requires_approval;
    let latency = options
        .latency
        .unwrap_or_else(|| quote!(::corral_guest::Latency::Fast));
    let return_behavior = options
        .return_behavior
        .unwrap_or_else(|| quote!(::corral_guest::ReturnBehavior::ToLlm));
    let priority = options.priority.unwrap_or(50);
    let depends_on = options.depends_on.iter();
    let output_schema = if options.output_schema {
        let ok_ty = result_ok_type(&sig.output).ok_or_else(|| {
            syn::Error::new(
                sig.output.span(),
                "`output_schema` needs a return type of the form `Result<T, E>`, \
                 where T derives JsonSchema",
            )
        })?;
        let span = ok_ty.span();
        quote_spanned!(span=> ::core::option::Option::Some(
            ::corral_guest::__private::schema_of::<#ok_ty>()
        ))
    } else {
        quote!(::core::option::Option::None)
    };
    let hint = |v: &Option<syn::LitInt>| match v {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    };
    let resilience = if options.max_attempts.is_some()
        || options.cache_ttl_ms.is_some()
        || options.requests_per_second.is_some()
    {
        let (a, c, r) = (
            hint(&options.max_attempts),
            hint(&options.cache_ttl_ms),
            hint(&options.requests_per_second),
        );
        quote!(::core::option::Option::Some(::corral_guest::ResilienceHints {
            max_attempts: #a,
            cache_ttl_ms: #c,
            requests_per_second: #r,
        }))
    } else {
        quote!(::core::option::Option::None)
    };
    let invoke = if takes_context {
        quote!(#ident(args, context))
    } else {
        quote!({
            let _ = context;
            #ident(args)
        })
    };
    let args_span = args_ty.span();
    let decode = quote_spanned! {args_span=>
        let args: #args_ty = ::corral_guest::__private::decode_arguments(arguments)?;
    };

    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #ident {}

        impl ::corral_guest::__private::ToolDef for #ident {
            const NAME: &'static str = #name;

            fn spec() -> ::corral_guest::ToolSpec {
                ::corral_guest::ToolSpec {
                    name: #name.to_string(),
                    description: #description.to_string(),
                    parameters: ::corral_guest::__private::schema_of::<#args_ty>(),
                    metadata: ::corral_guest::Metadata {
                        category: #category.to_string(),
                        keywords: ::std::vec![#(#keywords.to_string()),*],
                        version: #version.to_string(),
                        idempotent: #idempotent,
                        parallelizable: #parallelizable,
                        latency: #latency,
                        requires_approval: #requires_approval,
                        return_behavior: #return_behavior,
                        priority: #priority,
                        depends_on: ::std::vec![#(#depends_on.to_string()),*],
                        output_schema: #output_schema,
                        resilience: #resilience,
                    },
                }
            }

            fn call(
                arguments: &str,
                context: &::corral_guest::Context,
            ) -> ::core::result::Result<::corral_guest::__private::WitOutput, ::corral_guest::ToolError> {
                #decode
                ::corral_guest::__private::encode_output(#invoke)
            }
        }
    })
}
