//! `closed_set!` of `crate::contract`, with the TypeScript name given apart
//! from the Rust one: the shipped dialect's sets are named plainly inside
//! this module (`FailureCode`) but exported as `ShippedFailureCode`, so they
//! never collide with the RFC dialect's types of the same Rust name.

macro_rules! shipped_set {
    ($(#[$doc:meta])* $name:ident as $ts:literal { $($(#[$vdoc:meta])* $variant:ident = $value:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(::serde::Serialize, ::serde::Deserialize, ::ts_rs::TS, ::schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[ts(export, rename = $ts)]
        #[schemars(rename = $ts)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $value)] $variant,)+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $value,)+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($value => Some($name::$variant),)+ _ => None }
            }
        }
    };
}

pub(crate) use shipped_set;
