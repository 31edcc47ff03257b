//! The two macros behind the contracts' closed value sets, shared by
//! `crate::contract` and `crate::turn_start::contract`. They name their derive
//! macros by absolute path, so a caller needs no imports.

/// A one-variant enum for a `schema_version`: TypeScript sees the exact string
/// literal and JSON Schema a `const`; `VALUE` is the string.
macro_rules! literal {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(::serde::Serialize, ::serde::Deserialize, ::ts_rs::TS, ::schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
        #[ts(export)]
        pub enum $name {
            #[default]
            #[serde(rename = $value)]
            V0,
        }
        impl $name {
            pub const VALUE: &'static str = $value;
        }
    };
}

/// A closed set of strings: a TS string literal union, a JSON Schema `enum`,
/// `ALL` in declaration order, `as_str` and `parse`. Variants may carry doc
/// attributes of their own.
macro_rules! closed_set {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(::serde::Serialize, ::serde::Deserialize, ::ts_rs::TS, ::schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[ts(export)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $value)] $variant,)+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $value,)+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($value => Some($name::$variant),)+ _ => None }
            }
        }
    };
}

pub(crate) use closed_set;
pub(crate) use literal;
