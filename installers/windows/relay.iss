; Relay's Windows installer (Inno Setup 6.3 or later).
;
; installers/windows/build.ps1 builds the PyInstaller bundle and then runs, from the
; repository root:
;   ISCC.exe /DAppVersion=<version> /DBundleDir=<repo>\dist\relay /DIconFile=<repo>\build\windows\relay.ico
;            /DOutputDir=<repo>\dist installers\windows\relay.iss
; → dist\relay-<version>-windows-x64-setup.exe
;
; What it installs: the bundle (relay.exe = the window, relay-cli.exe = the command line,
; _internal\) into Program Files (all users, when run as administrator) or
; %LOCALAPPDATA%\Programs\Relay (just this user), a Start-menu entry, an optional desktop
; icon, and — a task checked by default — the install folder on PATH so `relay-cli` works
; in any new terminal. The uninstaller (Settings ▸ Apps, or unins000.exe) removes the files,
; the shortcuts and that PATH entry again, and nothing else of PATH.
; Silent install: relay-<version>-windows-x64-setup.exe /VERYSILENT /CURRENTUSER /TASKS=addtopath

#if VER < EncodeVer(6, 3, 0)
  #error Inno Setup 6.3 or later is needed (x64compatible architectures)
#endif

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef BundleDir
  #define BundleDir AddBackslash(SourcePath) + "..\..\dist\relay"
#endif
#ifndef IconFile
  #define IconFile AddBackslash(SourcePath) + "..\..\build\windows\relay.ico"
#endif
#ifndef OutputDir
  #define OutputDir AddBackslash(SourcePath) + "..\..\dist"
#endif

[Setup]
; AppId identifies Relay to Windows across versions (upgrades, uninstall): never change it.
AppId={{6F0C8E53-2A7B-4D4E-9C1F-5B3A7E21D9C4}
AppName=Relay
AppVersion={#AppVersion}
AppVerName=Relay {#AppVersion}
AppPublisher=Relay
DefaultDirName={autopf}\Relay
DefaultGroupName=Relay
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog commandline
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
ChangesEnvironment=yes
CloseApplications=yes
OutputDir={#OutputDir}
OutputBaseFilename=relay-{#AppVersion}-windows-x64-setup
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\relay.exe
UninstallDisplayName=Relay {#AppVersion}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "addtopath"; Description: "Add Relay to PATH (the relay-cli command in terminals)"; GroupDescription: "Command line:"

[InstallDelete]
; An upgrade replaces the whole library folder: no stale DLLs of the previous version.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Relay"; Filename: "{app}\relay.exe"; Comment: "Run AI coding agents in git worktrees and watch them live"
Name: "{autodesktop}\Relay"; Filename: "{app}\relay.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\relay.exe"; Description: "{cm:LaunchProgram,Relay}"; Flags: nowait postinstall skipifsilent

[Code]
const
  SystemEnvironmentKey = 'SYSTEM\CurrentControlSet\Control\Session Manager\Environment';
  UserEnvironmentKey = 'Environment';

{ The PATH this install owns: the machine's for an administrative install, else the user's. }
procedure EnvironmentKey(var RootKey: Integer; var SubKey: String);
begin
  if IsAdminInstallMode then
  begin
    RootKey := HKEY_LOCAL_MACHINE;
    SubKey := SystemEnvironmentKey;
  end
  else
  begin
    RootKey := HKEY_CURRENT_USER;
    SubKey := UserEnvironmentKey;
  end;
end;

function SameDir(A, B: String): Boolean;
begin
  Result := CompareText(RemoveBackslashUnlessRoot(Trim(A)), RemoveBackslashUnlessRoot(Trim(B))) = 0;
end;

{ Paths without any entry naming Dir (case-insensitive, with or without a trailing backslash). }
function PathWithout(Paths, Dir: String; var Found: Boolean): String;
var
  Parts, Kept: TArrayOfString;
  I, N: Integer;
begin
  Parts := StringSplit(Paths, [';'], stExcludeEmpty);
  SetArrayLength(Kept, GetArrayLength(Parts));
  N := 0;
  Found := False;
  for I := 0 to GetArrayLength(Parts) - 1 do
  begin
    if SameDir(Parts[I], Dir) then
      Found := True
    else
    begin
      Kept[N] := Parts[I];
      N := N + 1;
    end;
  end;
  SetArrayLength(Kept, N);
  Result := StringJoin(';', Kept);
end;

procedure AddToPath(Dir: String);
var
  RootKey: Integer;
  SubKey, Paths, Unused: String;
  Found: Boolean;
begin
  EnvironmentKey(RootKey, SubKey);
  if not RegQueryStringValue(RootKey, SubKey, 'Path', Paths) then
    Paths := '';
  Unused := PathWithout(Paths, Dir, Found);
  if Found then
  begin
    Log(Format('PATH already holds %s', [Dir]));
    exit;
  end;
  if (Paths <> '') and (Paths[Length(Paths)] <> ';') then
    Paths := Paths + ';';
  Paths := Paths + Dir;
  { REG_EXPAND_SZ keeps entries such as %SystemRoot% working. }
  if RegWriteExpandStringValue(RootKey, SubKey, 'Path', Paths) then
    Log(Format('Added %s to PATH', [Dir]))
  else
    Log(Format('Could not add %s to PATH', [Dir]));
end;

procedure RemoveFromPath(Dir: String);
var
  RootKey: Integer;
  SubKey, Paths: String;
  Found: Boolean;
begin
  EnvironmentKey(RootKey, SubKey);
  if not RegQueryStringValue(RootKey, SubKey, 'Path', Paths) then
    exit;
  Paths := PathWithout(Paths, Dir, Found);
  if not Found then
    exit;
  if RegWriteExpandStringValue(RootKey, SubKey, 'Path', Paths) then
    Log(Format('Removed %s from PATH', [Dir]))
  else
    Log(Format('Could not remove %s from PATH', [Dir]));
end;

procedure CurStepChanged(CurStep: TSetupStep);
begin
  if CurStep = ssPostInstall then
  begin
    if WizardIsTaskSelected('addtopath') then
      AddToPath(ExpandConstant('{app}'))
    else
      RemoveFromPath(ExpandConstant('{app}'));  { an upgrade that unticked the task }
  end;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usPostUninstall then
    RemoveFromPath(ExpandConstant('{app}'));
end;
